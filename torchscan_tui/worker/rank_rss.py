"""``python -m torchscan_tui.worker.rank_rss [--rss-steps=K] SCRIPT [ARGS]``: one rank of
the peak-RSS pass under ``torch.distributed.run``, reporting its own peak.

The rank runs the script as ``python SCRIPT ARGS`` would, then writes its own kernel
high-water mark (``ru_maxrss`` of this process, at exit) to the file the session made
for its ``LOCAL_RANK`` (``run/rank_files.py``), opened before the script runs: each
rank's peak is that rank's, not a sum nor the largest process of the job. With
``--rss-steps K`` it ends at its K-th optimizer step (``peak_pass``'s hook), writing the peak
so far and K. It then ends as the profile worker does, without torch's module teardown
(which frees memory, so the peak is the same).
"""

from __future__ import annotations

import os
import resource
import sys
import traceback
from collections.abc import Callable

from torchscan_tui.run.rank_files import open_handoff, rss_name
from torchscan_tui.worker.quick_exit import exit_now, exit_without_teardown


def write_peak(fd: int | None, stopped_at: int | None = None) -> None:
    """``PEAK`` or ``PEAK STEP`` (bytes; the step the pass ended at) into the session's
    file; nothing if the workload closed or replaced the descriptor."""
    if fd is None:
        return
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    text = str(peak) if stopped_at is None else f"{peak} {stopped_at}"
    try:
        os.write(fd, text.encode())
    except OSError:
        pass
    if "torch" in sys.modules:  # a job across nodes: the peak to rank 0's session too
        from torchscan_tui.worker.node_reports import share_peak

        share_peak(str(peak))


def stop_at(limit: int, fd: int | None) -> Callable[[], None]:
    """At the ``limit``-th outermost step: the peak so far and the step, then the end of
    this process at once (status 0), stdout and stderr flushed."""
    steps = 0

    def counted() -> None:
        nonlocal steps
        steps += 1
        if steps == limit:
            write_peak(fd, steps)
            exit_now(0)

    return counted


def main(argv: list[str]) -> int:
    limit = None
    if argv and argv[0].startswith("--rss-steps="):
        limit = int(argv.pop(0).split("=", 1)[1])
    script, *args = argv
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    try:
        fd: int | None = open_handoff(rss_name(local_rank))
    except OSError as exc:
        print(f"torchscan-tui: local rank {local_rank}: no peak file: {exc}", file=sys.stderr)
        fd = None
    from torchscan_tui.worker.peak_pass import hook_steps_when_torch_loads, run_script

    if limit is not None:
        hook_steps_when_torch_loads(stop_at(limit, fd))
    code = 0
    try:
        run_script(script, args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - said as Python says it, and the rank fails
        traceback.print_exc()
        code = 1
    finally:
        write_peak(fd)
    return code


if __name__ == "__main__":
    # As the profile worker ends: atexit, threads and flushes as shutdown does, without
    # the teardown of torch's modules, which under gloo aborts now and then
    # ("terminate called without an active exception") after the script is done.
    exit_without_teardown(main(sys.argv[1:]))
