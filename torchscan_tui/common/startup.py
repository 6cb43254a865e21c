"""The cyclic collector paused while the command starts, resumed once it has.

Starting the app imports Textual and our screens and builds the first frame: some
hundreds of thousands of objects (modules, classes, functions, styles) that live as long
as the process and hold no garbage. The collector's young passes walked them over and
over as they were made: ~40 ms of the ~350 ms from ``torchscan-tui report.json`` to its
first painted row here (benchmarks/report_open.py). So the entry points pause it first
(:func:`pause_for_start`), and the app, once its first frame is painted, or the command,
before any long work of its own, calls :func:`started`: what exists then is frozen out of
the collector's reach (``gc.freeze``: reference counting still frees it) and the
collector resumes. :func:`started` is idempotent and does nothing unless paused here.
"""

from __future__ import annotations

import gc

_paused = False


def pause_for_start() -> None:
    """Pause the collector until :func:`started` (the entry points' first call)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """Start-up is over: freeze what it made and resume the collector it paused."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
