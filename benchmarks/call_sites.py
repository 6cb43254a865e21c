"""Issue 29, point 1: what call sites cost, and that the window's times do not move.

The window is recorded without stacks; one step after it is traced for call sites and
module ranges (worker/call_sites.py). Each workload runs headless with and without
``--no-stack``, interleaved; printed: the rows' summed CPU self time with over without
(the window's: should stay within noise, target within 10%), the whole run's wall time
with over without, and the traced step's wall time over a profiled step's median.

    python -m benchmarks.call_sites [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._timing import byte_compile_package

WORKLOADS = ["sample_workloads/transformer.py", "tests/workloads/train_transformer.py"]


def run(script: str, out: Path, *options: str) -> tuple[float, dict]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "torchscan_tui", script, "--json", str(out),
                    "--force", *options], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started, json.loads(out.read_text())


def main() -> None:
    byte_compile_package()
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "r.json"
        for script in WORKLOADS:
            walls: dict[str, list[float]] = {"with": [], "without": []}
            sums: dict[str, list[float]] = {"with": [], "without": []}
            traced: list[float] = []
            for _ in range(args.repeats):
                for name, options in (("with", ()), ("without", ("--no-stack",))):
                    wall, report = run(script, out, *options)
                    walls[name].append(wall)
                    sums[name].append(report["context"]["cpu_self_seconds_sum"])
                    if name == "with":
                        step = statistics.median(report["context"]["steps"]["step_seconds"])
                        traced.append(report["context"]["call_sites_step_seconds"] / step)
            self_ratio = statistics.median(sums["with"]) / statistics.median(sums["without"])
            wall_ratio = statistics.median(walls["with"]) / statistics.median(walls["without"])
            print(f"{script} ({args.repeats} runs each, medians)")
            print(f"  window's summed CPU self time, with / without: {self_ratio:.3f}"
                  "   target within 10% (0.90-1.10)")  # fmt: skip
            print(f"  whole headless run, with / without:            {wall_ratio:.3f}")
            print(
                f"  traced step / a profiled step:                 {statistics.median(traced):.2f}"
            )


if __name__ == "__main__":
    main()
