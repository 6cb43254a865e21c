"""``python -m torchscan_tui.worker.step_limit K SCRIPT [ARGS]``: run a script as
``__main__``, ending it at its K-th optimizer step (``--rss-steps K``).

The peak-RSS pass of a long job (hours, millions of steps) need not run to the end: this
runs it as ``python SCRIPT ARGS`` would, with a global hook on every torch.optim
optimizer (the outermost step only: ``optimizer_steps``), and at the K-th step writes K
to the file the session made for it (``rss.stopped``) and ends the process at once, with
status 0, from whatever thread stepped. Not an exception: a script that catches
``BaseException`` around its steps would swallow it and run on, and the figure would no
longer be the run's up to step K. The peak is then the kernel's figure for what ran up to
step K, and the report says so; a script with fewer steps runs to its end, and the
report says that instead (the file stays empty).
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Callable

from torchscan_tui.run.rank_files import RSS_STOPPED, open_handoff


def stop_at_step(limit: int, before_exit: Callable[[int], None] = lambda step: None) -> None:
    """End this process at its ``limit``-th outermost optimizer step, ``before_exit(step)``
    first, stdout and stderr flushed."""
    from torchscan_tui.worker.optimizer_steps import on_outermost_steps

    steps = 0

    def counted() -> None:
        nonlocal steps
        steps += 1
        if steps == limit:
            before_exit(steps)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - closed or replaced by the script
                    pass
            os._exit(0)

    on_outermost_steps(counted)


def say_stopped(fd: int | None, step: int) -> None:
    """Tell the session the pass ended at ``step`` (the workload may have closed the fd)."""
    if fd is not None:
        try:
            os.write(fd, str(step).encode())
        except OSError:
            pass


def run_script(script: str, args: list[str]) -> None:
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as ``python SCRIPT`` has it
    runpy.run_path(script, run_name="__main__")


def main(argv: list[str]) -> None:
    limit, script, *args = argv
    try:
        fd: int | None = open_handoff(RSS_STOPPED)
    except OSError:
        fd = None  # run by hand: nobody to tell
    stop_at_step(int(limit), lambda step: say_stopped(fd, step))
    run_script(script, args)


if __name__ == "__main__":
    main(sys.argv[1:])
