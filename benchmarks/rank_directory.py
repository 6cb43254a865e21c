"""Issue 31, point 1: a job's directory of rank traces, ours against one rank's open.

Sixteen rank traces (by default) made of the real A100 trace (``benchmarks.big_trace``'s
clone, ``distributedInfo.rank`` set per rank: ~50 MB each at 1.5 copies). Timed, each in
a fresh process: how long the rank picker takes to tell the directory is one job (every
trace's rank read from its head, nothing parsed: target < 1 s); the whole cross-rank
session (``open_rank_directory``: every rank parsed in a process pool); and each rank's
trace opened alone, the slowest of them the yardstick (target: the session within 1.5x
of it). A pool runs as many ranks at once as there are cores, so the ratio is printed
both as is and per round of the pool (the session over ceil(ranks / cores) slowest
opens): on a machine with a core per rank the two are one.

    python -m benchmarks.rank_directory [--ranks 16] [--copies 1.5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

from .big_trace import clone_trace, timed

PICKER = """
import sys, time
from pathlib import Path
from torchscan_tui.formats.opening import traces_in
from torchscan_tui.formats.ranks import rank_hint
started = time.perf_counter()
hints = [rank_hint(path) for path in traces_in(Path(sys.argv[1]))]
assert None not in hints and len(set(hints)) == len(hints)
print(time.perf_counter() - started)
"""
SESSION = """
import sys
from torchscan_tui.formats.ranks import open_rank_directory
opened = open_rank_directory(sys.argv[1])
assert opened is not None and opened[0]["context"]["ranks"] == int(sys.argv[2])
"""
ONE = """
import sys
from torchscan_tui.formats.opening import open_profile
open_profile(sys.argv[1])
"""


def write_ranks(folder: Path, ranks: int, copies: float) -> None:
    """Rank 0's trace cloned, then each rank's a copy with its own rank in its head."""
    first = folder / "rank-0.pt.trace.json"
    clone_trace(copies, first)
    text = first.read_text(encoding="utf-8")
    head, events = text.split('"traceEvents"', 1)
    info = json.loads(head.rstrip(", ") + "}") if head.strip() != "{" else {}
    for rank in range(ranks):
        distributed = {**info.get("distributedInfo", {}), "rank": rank, "world_size": ranks}
        header = {**info, "distributedInfo": distributed}
        body = json.dumps(header)[:-1] + ', "traceEvents"' + events
        (folder / f"rank-{rank}.pt.trace.json").write_text(body, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=float, default=1.5)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        write_ranks(folder, args.ranks, args.copies)
        size = (folder / "rank-0.pt.trace.json").stat().st_size
        print(f"{args.ranks} rank traces of {size / 2**20:.0f} MiB; {os.cpu_count()} cores")
        import subprocess

        picker = float(
            subprocess.run(
                [python, "-c", PICKER, str(folder)], capture_output=True, text=True, check=True
            ).stdout  # fmt: skip
        )
        print(f"  picker (every rank read from its head): {picker:.3f} s   target < 1 s")
        session, session_peak = timed([python, "-c", SESSION, str(folder), str(args.ranks)])
        singles = []
        for rank in range(args.ranks):
            started = time.perf_counter()
            seconds, _ = timed([python, "-c", ONE, str(folder / f"rank-{rank}.pt.trace.json")])
            singles.append(max(seconds, time.perf_counter() - started))
        slowest = max(singles)
        rounds = math.ceil(args.ranks / (os.cpu_count() or 1))
        print(f"  cross-rank session: {session:.2f} s (peak RSS of its parent "
              f"{session_peak / 2**20:.0f} MiB); slowest single rank: {slowest:.2f} s")  # fmt: skip
        print(f"  session / slowest rank: {session / slowest:.2f}   target <= 1.5")
        print(f"  per round of the pool ({rounds} rounds on these cores): "
              f"{session / (slowest * rounds):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
