"""Issue 28, point 2: how much a step window's events cost the worker at its peak.

Each run is a fresh process (``ru_maxrss`` is a process's lifetime peak) that profiles a
window of op-dense steps with ``profile_workload`` (a step of N small additions: about
11 events each, shapes and memory recorded) and prints what the window's memory figures
say: what recording grew the process by, and the process's peak over its size when the
window opened, beside the peak the window's budget check projects from the recording
(``WindowMemory.projected_peak``: the window ends early when one more step would pass
the worker's memory budget), and their ratio: under 1 where the window's steps make the
peak (1.19M events: 0.77); over it where the step traced after the window for call sites
does (297k events: 1.53), which has a check of its own (``room_for``, 16x its recording).

Beside it, the floor: torch's own profiler over the same steps, as the window records
them, with nothing of ours (what any tool that reads torch's results starts from).

    python -m benchmarks.window_memory [--ops 20000] [--steps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from torchscan_tui.worker.window_memory import BUDGET_VARIABLE, WindowMemory

# The step both children profile: N small additions (about 11 events each).
STEP = """
import json, resource, sys, torch
ops, steps = int(sys.argv[1]), int(sys.argv[2])
x = torch.ones(8, 8)
def step():
    y = x
    for _ in range(ops):
        y = y + 1
"""
CHILD = (
    STEP
    + """
from torchscan_tui.worker.profiling import profile_workload
from torchscan_tui.worker.steps import StepWindow, call_steps
window = StepWindow(1, steps)
report = profile_workload(call_steps(step, window), window=window)
print(json.dumps({"events": report["context"]["events"],
                  "memory": report["context"]["steps"]["memory"]}))
"""
)
# The floor: torch's own profiler, configured as the worker's window (shapes, memory),
# over the same steps after the same warm-up step; the peak growth after its stop, and
# after reading its events (``kineto_results.events()``: what any reader must call).
TORCH_ONLY = (
    STEP
    + """
from torch.profiler import ProfilerActivity, profile
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
step()
start = rss()
prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True)
prof.start()
for _ in range(steps):
    step()
prof.stop()
stopped = peak() - start
events = prof.profiler.kineto_results.events()
print(json.dumps({"events": len(events), "stopped": stopped, "read": peak() - start}))
"""
)


def run_child(code: str, ops: int, steps: int, environment: dict | None = None) -> dict:
    """What the child printed last, as JSON."""
    done = subprocess.run([sys.executable, "-c", code, str(ops), str(steps)],
                          capture_output=True, text=True, check=True, env=environment)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(ops: int, steps: int) -> dict:
    environment = {**os.environ, BUDGET_VARIABLE: "1T"}  # never cut: measure it all
    return run_child(CHILD, ops, steps, environment)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    for ops in (args.ops // 4, args.ops):
        figures = measure(ops, args.steps)
        memory = figures["memory"]
        peak_growth = memory["peak_rss"] - memory["window_start_rss"]
        model = WindowMemory(None, "", per_step_sessions=True, recorded=memory["recorded_bytes"],
                             steps_done=args.steps)  # fmt: skip
        projected = model.projected_peak()  # what the window's budget check assumed
        print(f"{figures['events']:>9} events: recorded {memory['recorded_bytes'] / 1e6:8.1f} MB,"
              f" peak growth {peak_growth / 1e6:8.1f} MB, projected {projected / 1e6:8.1f} MB:"
              f" ratio measured / projected {peak_growth / max(projected, 1):5.2f}")  # fmt: skip
        floor = run_child(TORCH_ONLY, ops, args.steps)
        print(f"{floor['events']:>9} events, torch's profiler alone: peak growth"
              f" {floor['stopped'] / 1e6:8.1f} MB at its stop, {floor['read'] / 1e6:8.1f} MB"
              f" with its events read; the worker's / torch's = "
              f"{peak_growth / max(floor['read'], 1):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
