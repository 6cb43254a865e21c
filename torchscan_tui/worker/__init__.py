"""The profile worker: the only part of this package that imports torch.

``python -m torchscan_tui.worker SCRIPT [--callable NAME] [-- ARGS]`` (see :mod:`.main`)
loads the workload, profiles it once (:mod:`.profiling`, also the library's
``profile_workload``) and streams ranked rows on the channel of
:mod:`torchscan_tui.run.protocol`. May import everything below the UI; nothing imports it
but the package's lazy public API.
"""
