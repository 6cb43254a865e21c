"""A directory of two GPU rank traces made from one real one (tests/data/trace_diff_control,
rank 3 of an 8-GPU NCCL job), for the rank view's device figures against HTA's.

Rank 0 is the trace as recorded. Rank 1 is the same trace as a straggler would leave it:
each NCCL all-reduce kernel starts half its length later and ends when it did (the
rank reached the collective late; its peers waited), so its collectives start later in
their steps and run shorter. HTA's numbers in tests/data/hta_reference.json were taken
on the directory this writes (``python tests/rank_pair.py DIR``, then HTA on DIR).
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
from pathlib import Path

SOURCE = Path(__file__).parent / "data" / "trace_diff_control.json.gz"
LATE_COLLECTIVE = "ncclKernel_AllReduce"


def write_rank_pair(folder: Path) -> list[Path]:
    """``rank-0.json.gz`` and ``rank-1.json.gz`` in ``folder`` (see the module's docstring)."""
    trace = json.loads(gzip.decompress(SOURCE.read_bytes()))
    paths = []
    for rank in (0, 1):
        ranked = copy.deepcopy(trace)
        ranked["distributedInfo"] = {**trace["distributedInfo"], "rank": rank, "world_size": 2}
        if rank == 1:
            for event in ranked["traceEvents"]:
                if event.get("cat") == "kernel" and event["name"].startswith(LATE_COLLECTIVE):
                    late = event["dur"] // 2
                    event["ts"] += late
                    event["dur"] -= late
        path = folder / f"rank-{rank}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(ranked).encode(), mtime=0))
        paths.append(path)
    return paths


if __name__ == "__main__":
    write_rank_pair(Path(sys.argv[1]))
