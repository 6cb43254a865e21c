"""``python -m torchscan_tui.worker.rank_rss DIR SCRIPT [ARGS]``: one rank of the peak-RSS
pass under ``torch.distributed.run``, reporting its own peak.

The rank runs the script as ``python SCRIPT ARGS`` would, then writes its own kernel
high-water mark (``ru_maxrss`` of this process, at exit) to ``DIR/rank-R.rss``: each
rank's peak is that rank's, not a sum nor the largest process of the job.
"""

from __future__ import annotations

import os
import resource
import runpy
import sys


def rss_path(folder: str, rank: int) -> str:
    return os.path.join(folder, f"rank-{rank}.rss")


def main(argv: list[str]) -> None:
    folder, script, *args = argv
    rank = int(os.environ.get("RANK", "0"))
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as ``python SCRIPT`` has it
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        with open(rss_path(folder, rank), "w") as out:
            out.write(str(peak_kib * 1024))


if __name__ == "__main__":
    main(sys.argv[1:])
