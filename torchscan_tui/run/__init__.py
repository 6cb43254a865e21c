"""One run of a workload, from the UI's side: no torch, no textual.

Owns: the session (both passes and the events they send up), the event sources the app is
handed (live, reopened report), the measured child and its launcher (peak RSS from
``wait4``), the channel protocol the worker streams rows on, private directories and OOM
hints. May import :mod:`torchscan_tui.formats`, :mod:`torchscan_tui.analysis` and
:mod:`torchscan_tui.common`. It starts the worker as ``python -m torchscan_tui.worker``,
never by importing it.
"""
