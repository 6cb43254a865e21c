"""``python -m torchscan_tui.worker.rank_rss DIR SCRIPT [ARGS]``: one rank of the peak-RSS
pass under ``torch.distributed.run``, reporting its own peak.

The rank runs the script as ``python SCRIPT ARGS`` would, then writes its own kernel
high-water mark (``ru_maxrss`` of this process, at exit) to ``DIR/local-L.rss`` (L its
``LOCAL_RANK``: see ``run/rank_files.py``): each
rank's peak is that rank's, not a sum nor the largest process of the job. It then ends
as the profile worker does, without torch's module teardown (which frees memory, so the
peak is the same).
"""

from __future__ import annotations

import os
import resource
import runpy
import sys
import traceback

from torchscan_tui.run.rank_files import rss_name
from torchscan_tui.worker.quick_exit import exit_without_teardown


def main(argv: list[str]) -> int:
    folder, script, *args = argv
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as ``python SCRIPT`` has it
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - said as Python says it, and the rank fails
        traceback.print_exc()
        code = 1
    finally:
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        with open(os.path.join(folder, rss_name(local_rank)), "w") as out:
            out.write(str(peak_kib * 1024))
    return code


if __name__ == "__main__":
    # As the profile worker ends: atexit, threads and flushes as shutdown does, without
    # the teardown of torch's modules, which under gloo aborts now and then
    # ("terminate called without an active exception") after the script is done.
    exit_without_teardown(main(sys.argv[1:]))
