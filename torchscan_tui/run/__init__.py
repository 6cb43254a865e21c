"""One run of a workload, from the UI's side: no torch, no textual.

Owns: the session (both passes and the events they send up), the event sources the app
is handed (live, reopened report), the measured child and its launcher (peak RSS from
``wait4``), the channel protocol the worker streams rows on, torchrun jobs (their
commands, per-rank files, and following each rank's rows live), the phases' words,
private directories and OOM hints. May import :mod:`torchscan_tui.formats`,
:mod:`torchscan_tui.analysis` and :mod:`torchscan_tui.common`. It starts the worker as
``python -m torchscan_tui.worker``, never by importing it.
"""
