"""Target 5: the headless run end to end costs <= 1.1x the two runs it cannot avoid.

Those two: the plain workload process (``python script.py``, what peak RSS measures) and a
bare torch.profiler process of the same callable (import the script, profile
``workload()`` with the same options, nothing else: no grouping, no table). Our worker
ends without the interpreter's teardown of torch (``quick_exit``), which the bare
process pays, so a second ratio is printed against a bare process that skips it too:
the cost of everything else we do. Ours:
``torchscan-tui script.py --json OUT --warmup 0`` from start to exit (one profiled call,
as the bare process makes: the default warm-up call is a choice of what to measure, not a
cost of measuring), which also groups the events,
sends the rows and writes the report. All three are timed as whole processes from the
shell's point of view, interleaved, on the bundled sample workloads.

    python -m benchmarks.headless [--repeats 3] [--workload sample_workloads/mlp.py]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._timing import byte_compile_package, report

BARE_PROFILER = """
import importlib.util, sys
import torch
from torch.profiler import ProfilerActivity, profile
spec = importlib.util.spec_from_file_location("workload_module", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True):
    module.workload()
"""

# The same, ending as our worker does (quick_exit): without torch's 0.8-0.9 s of module
# teardown. Printed as a second ratio, so the gain from skipping teardown is not hidden.
BARE_PROFILER_QUICK_EXIT = BARE_PROFILER + "import os\nos._exit(0)\n"


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    byte_compile_package()
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--workload",
        action="append",
        default=None,
        help="a script defining workload() (default: the bundled CPU samples)",
    )
    args = parser.parse_args()
    scripts = args.workload or [
        "sample_workloads/mlp.py",
        "sample_workloads/convnet_train.py",
        "sample_workloads/transformer.py",
    ]
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "report.json")
        ratios = []
        for script in scripts:
            plain, bare, bare_quick, ours = [], [], [], []
            for _ in range(args.repeats):
                plain.append(timed([python, script]))
                bare.append(timed([python, "-c", BARE_PROFILER, script]))
                bare_quick.append(timed([python, "-c", BARE_PROFILER_QUICK_EXIT, script]))
                ours.append(
                    timed(
                        [
                            python,
                            "-m",
                            "torchscan_tui",
                            script,
                            "--json",
                            out,
                            "--force",
                            "--warmup",
                            "0",
                        ]
                    )  # fmt: skip
                )
            base = [p + b for p, b in zip(plain, bare, strict=True)]
            print(
                f"{script}: plain {statistics.median(plain):.2f} s + bare profiler "
                f"{statistics.median(bare):.2f} s"
            )
            ratios.append(report(f"  headless run ({script})", base, ours, "<= 1.1"))
            quick = [p + b for p, b in zip(plain, bare_quick, strict=True)]
            report("  the same, bare profiler without teardown too", quick, ours, "(for reference)")
        print(f"worst ratio over the workloads: {max(ratios):.3f}   target <= 1.1")


if __name__ == "__main__":
    main()
