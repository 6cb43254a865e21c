"""Leave a process as interpreter shutdown would, minus the teardown of its modules.

A process that imported torch spends 0.8-0.9 s here (2 cores, torch 2.13) between its last
line and its exit, tearing down modules and libtorch's objects; with ``os._exit`` after
the steps that matter it takes 0.04 s. The profile worker ends this way: its results are
sent by then, and the UI (or the headless run) waits for its exit. The measured child
never does: it runs the workload as ``python script.py`` would, teardown included.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import NoReturn

THREAD_EXIT_GRACE_S = 1.0


def exit_without_teardown(code: int) -> NoReturn:
    """Do what shutdown does that anyone could notice, then ``os._exit(code)``.

    In shutdown's order: wait for non-daemon threads (a workload's writer thread finishes
    its file; the worker has already waited a while for them and said which never ended,
    so here each gets a moment only), run ``atexit`` callbacks (logging, multiprocessing,
    ``weakref.finalize``, the workload's own), flush stdout and stderr. Skipped: clearing
    modules and running ``__del__`` of objects still alive, which the operating system
    makes moot.
    """
    main = threading.main_thread()
    deadline = time.monotonic() + THREAD_EXIT_GRACE_S
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon:
            thread.join(max(deadline - time.monotonic(), 0))
    atexit._run_exitfuncs()
    exit_now(code)


def exit_now(code: int = 0) -> NoReturn:
    """Flush stdout and stderr and leave at once: a stop mid-script (``--rss-steps``,
    ``--stop-at``), from whatever thread stepped, which no ``except BaseException`` of
    the script can swallow."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - closed, broken or replaced: shutdown ignores it too
            pass
    os._exit(code)
