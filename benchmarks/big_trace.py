"""Issue 31, point 1: a 1M-event real-shaped trace, ours beside the TensorBoard plugin's
loader and HTA's parser, in one run.

The trace is real events cloned: ``tests/data/trace_diff_control.json.gz`` (an A100
training trace: 109k events with shapes, call stacks, module hierarchy, kernels, flows)
repeated with its times shifted past the previous copy and its ids (External id,
correlation, flow ids, ProfilerStep numbers) made unique per copy, so each copy is a run
of steps after the last, as a long job's trace is. Each reader runs in a fresh process,
interleaved; printed: wall time, peak RSS (the kernel's ``ru_maxrss`` of that process),
both over the file's size, and our ratios to each reference:

- ours: ``open_profile`` (decode, group, summaries: the whole report), the same of the
  trace gzipped (as ``tensorboard_trace_handler(use_gzip=True)`` writes it), and
  ``torchscan-tui TRACE --json OUT`` (the conversion);
- the plugin (torch-tb-profiler 0.4.3): ``RunProfileData.from_json`` then ``process()`` and
  ``analyze()``, what its UI waits for;
- HTA 0.5.0: ``TraceAnalysis(trace_dir=...)``, its parse of the rank's trace;
- ``json.load`` of the file, the yardstick of the other trace benchmarks.

Then the app itself on the trace, in tmux (run/trace_source.py): seconds to its first
painted rows (the first part's, read in its first second) and to every row, and the UI
process's peak RSS (VmHWM), with Textual in it.

The references live in a scratch virtual environment, never dependencies of ours:
``$TORCHSCAN_REFS`` (default ``~/.cache/torchscan-tui/refs``), made and filled with pip
when absent; when that cannot be done the line says so and ours are timed alone.

    python -m benchmarks.big_trace [--copies 10] [--repeats 1] [--no-refs]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._terminal import Terminal
from ._tree_memory import TreePeak, tree_pss_bytes

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "trace_diff_control.json.gz"
REFS = Path(os.environ.get("TORCHSCAN_REFS", Path.home() / ".cache" / "torchscan-tui" / "refs"))
REFERENCE_PACKAGES = ["HolisticTraceAnalysis==0.5.0"]
PLUGIN = "torch-tb-profiler==0.4.3"  # installed without its dependencies: its loader needs pandas

OURS_OPEN = """
import sys
from torchscan_tui.formats.opening import open_profile
report, _ = open_profile(sys.argv[1])
assert report["operators"]
"""
OURS = ("ours (open)", "ours (open .gz)", "ours (--json)")
JSON_LOAD = """
import json, sys
with open(sys.argv[1], "rb") as handle:
    json.load(handle)
"""
PLUGIN_LOAD = """
import json, logging, sys, types, importlib.util
logging.disable(logging.WARNING)
spec = importlib.util.find_spec("torch_tb_profiler")
package = types.ModuleType("torch_tb_profiler")  # its __init__ starts TensorBoard: skipped
package.__path__ = list(spec.submodule_search_locations)
sys.modules["torch_tb_profiler"] = package
from torch_tb_profiler.profiler.data import RunProfileData
with open(sys.argv[1], "rb") as handle:
    data = RunProfileData.from_json("worker0", 0, json.loads(handle.read()))
data.process()
data.analyze()
"""
# Where our open's time goes, stage by stage, in a fresh process (what docs/performance.md
# cites): the pieces read into columns, grouping, the step model, the summaries; one after
# the other here, where the open makes the last two in a child beside the grouping.
OURS_STAGES = """
import json, sys, time
from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.step_model import find_steps
from torchscan_tui.analysis.summaries import summaries
from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.formats.opening import _streamed_trace
stages, clock = {}, time.perf_counter()
def lap(name):
    global clock
    now = time.perf_counter()
    stages[name] = round(now - clock, 2)
    clock = now
with gc_paused():
    streamed = _streamed_trace(sys.argv[1], lambda *_: None)
    assert streamed is not None, "not read in pieces"
    columns = streamed[1].columns
    lap("pieces into columns")
    aggregate_events(columns)
    lap("grouping")
    steps = find_steps(columns)
    lap("step model")
    summaries(columns, steps)
    lap("overview and device timeline")
print(json.dumps(stages))
"""
HTA_PARSE = """
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1])
"""


def clone_trace(copies: float, out: Path) -> int:
    """Write ``copies`` of the source trace's events, one run after another (a fraction:
    the last copy's first events); returns the number of events written."""
    with gzip.open(SOURCE, "rb") as handle:
        trace = json.load(handle)
    events = trace.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in timed)
    # An int gap after int times: a float would write every later time as "N.0", which
    # the source (integer microseconds) never does.
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - start + 1000
    steps = [
        int(e["name"].split("#", 1)[1])
        for e in events
        if str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    step_offset = (max(steps) - min(steps) + 1) if steps else 0
    id_offset = 10_000_000
    written = 0
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("{")
        for key, value in trace.items():
            handle.write(f"{json.dumps(key)}: {json.dumps(value)}, ")
        handle.write('"traceEvents": [\n')
        first = True
        for copy in range(math.ceil(copies)):
            part = events if copy < int(copies) else events[: int(len(events) * (copies % 1))]
            for event in part:
                if copy and event.get("ph") == "M":
                    continue  # metadata once
                clone = dict(event)
                if copy:
                    if isinstance(clone.get("ts"), (int, float)):
                        clone["ts"] = clone["ts"] + copy * span
                    if "id" in clone and isinstance(clone["id"], int):
                        clone["id"] += copy * id_offset
                    name = str(clone.get("name", ""))
                    if name.startswith("ProfilerStep#"):
                        clone["name"] = f"ProfilerStep#{int(name[13:]) + copy * step_offset}"
                    args = clone.get("args")
                    if isinstance(args, dict):
                        args = clone["args"] = dict(args)
                        for key in ("External id", "external id", "correlation"):
                            if isinstance(args.get(key), int):
                                args[key] += copy * id_offset
                handle.write(("" if first else ",\n") + json.dumps(clone))
                first = False
                written += 1
        handle.write("\n]}\n")
    return written


def gzipped(trace: Path) -> Path:
    """The trace gzipped beside it (written once, at gzip's default level 6)."""
    compressed = trace.with_name(trace.name + ".gz")
    if not compressed.exists():
        with open(trace, "rb") as plain, gzip.open(compressed, "wb", compresslevel=6) as out:
            while block := plain.read(16 << 20):
                out.write(block)
    return compressed


def timed(argv: list[str], tree: bool = False) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of one process (``wait4``'s rusage). ``tree``: the
    peak is the larger of that and the summed Pss of the process and its children,
    sampled (our open's summaries are made in a forked child: _tree_memory.py); the
    sampling takes some of the machine's time, so such a run is not one of the timed."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = TreePeak(process.pid) if tree else None
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    tree_peak = sampler.stop() if sampler else 0
    error = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[:3]} failed: {error[-800:]}")
    return seconds, max(usage.ru_maxrss * 1024, tree_peak)


def app_open(trace: Path, tree: bool = False) -> tuple[float, float, float, float, bool]:
    """The app on the trace in a real terminal (tmux): seconds to its first painted rows
    (the first part's, formats/early_rows.py, or the whole's when it is read first), to
    every row (done), the UI process's peak RSS in MiB (VmHWM), and whether the first
    rows were the part's. ``tree``: the peak of its and its children's summed Pss in MiB
    too (sampled, _tree_memory.py: reading a process's page tables takes its time, so
    such a run's seconds are not the ones to quote); else 0."""
    from .report_open import memory_mib

    terminal = Terminal(220, 40)
    started = time.perf_counter()
    sampler: TreePeak | None = None
    try:
        terminal.start(f"exec env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui {trace}")
        if tree:
            sampler = TreePeak(terminal.pane_pid(), interval=0.05)
        screen = terminal.wait_for("grouped operators", timeout=300, interval=0.05)
        first, early = time.perf_counter() - started, "early_rows" in screen
        while "early_rows" in screen or " done " not in screen:
            time.sleep(0.05)
            screen = terminal.screen()
        whole = time.perf_counter() - started
        pid = terminal.pane_pid()
        summed = max(sampler.stop(), tree_pss_bytes(pid)) / 2**20 if sampler else 0.0
        return first, whole, memory_mib(pid), summed, early
    finally:
        if sampler is not None:
            sampler.stop()
        terminal.close()


def reference_python(allowed: bool) -> tuple[str | None, str]:
    """The scratch environment's Python with the references, or None and why not."""
    if not allowed:
        return None, "references not asked for (--no-refs)"
    python = REFS / "bin" / "python"
    check = [str(python), "-c", "import hta, importlib.util as u; "
             "assert u.find_spec('torch_tb_profiler')"]  # fmt: skip
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python), f"references from {REFS}"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(REFS)], check=True,
                           capture_output=True)  # fmt: skip
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *REFERENCE_PACKAGES], check=True, capture_output=True, timeout=900)
        subprocess.run([*pip, "--no-deps", PLUGIN], check=True, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the references could not be installed in {REFS} ({exc}): ours alone"
    if subprocess.run(check, capture_output=True).returncode != 0:
        return None, f"the references in {REFS} do not import: ours alone"
    return str(python), f"references installed in {REFS}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=float, default=10, help="copies of the 109k events")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-refs", action="store_true")
    parser.add_argument("--keep", default=None, help="write (or reuse) the trace here")
    args = parser.parse_args()
    refs, said = reference_python(not args.no_refs)
    print(said)
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(args.keep) if args.keep else Path(folder) / "rank0" / "big.pt.trace.json"
        trace.parent.mkdir(parents=True, exist_ok=True)
        if not trace.exists():
            # In a process of its own: the source's events loaded here would stay in this
            # process's RSS, which each child's ru_maxrss starts from (fork).
            clone = (
                "from benchmarks.big_trace import clone_trace; "
                f"print(clone_trace({args.copies}, {str(trace)!r}))"
            )
            written = subprocess.run([sys.executable, "-c", clone], capture_output=True,
                                     text=True, check=True, cwd=ROOT)  # fmt: skip
            count = int(written.stdout)
            print(f"wrote {count:,} events ({args.copies} copies of {SOURCE.name})")
        size = trace.stat().st_size
        compressed = gzipped(trace)
        print(f"trace: {size / 2**20:.0f} MiB; as .gz {compressed.stat().st_size / 2**20:.0f} MiB")
        out = Path(folder) / "out.json"
        python = sys.executable
        readers = {
            "json.load": [python, "-c", JSON_LOAD, str(trace)],
            "ours (open)": [python, "-c", OURS_OPEN, str(trace)],
            # What tensorboard_trace_handler(use_gzip=True) writes: the same JSON.
            "ours (open .gz)": [python, "-c", OURS_OPEN, str(compressed)],
            "ours (--json)": [
                python,
                "-m",
                "torchscan_tui",
                str(trace),
                "--json",
                str(out),
                "--force",
            ],  # fmt: skip
        }
        if refs is not None:
            readers["the plugin"] = [refs, "-c", PLUGIN_LOAD, str(trace)]
            # HTA parses every JSON file of the folder it is given as a rank's trace: a
            # folder of this trace alone (a --keep path's folder may hold other files).
            alone = Path(folder) / "hta"
            alone.mkdir()
            (alone / trace.name).symlink_to(trace.resolve())
            readers["HTA"] = [refs, "-c", HTA_PARSE, str(alone)]
        results: dict[str, list[tuple[float, int]]] = {name: [] for name in readers}
        for _ in range(args.repeats):
            for name, argv in readers.items():
                try:
                    results[name].append(timed(argv))
                except RuntimeError as exc:
                    print(f"  {name}: {exc}")
        # Ours once more each, for memory alone: the process's mark or its and its
        # child's summed Pss (the summaries made beside the grouping), the larger.
        trees = {name: timed(readers[name], tree=True)[1] for name in OURS if results[name]}
        medians = {}
        for name, runs in results.items():
            if not runs:
                continue
            seconds = sorted(s for s, _ in runs)[len(runs) // 2]
            peak = trees.get(name) or sorted(p for _, p in runs)[len(runs) // 2]
            medians[name] = (seconds, peak)
            print(f"  {name:<14} {seconds:7.2f} s   peak RSS {peak / 2**20:7.0f} MiB "
                  f"({peak / size:.2f}x the file)")  # fmt: skip
        stages = subprocess.run([python, "-c", OURS_STAGES, str(trace)], capture_output=True,
                                text=True, check=True).stdout.strip().splitlines()[-1]  # fmt: skip
        print("ours by stage (s):", ", ".join(f"{k} {v}" for k, v in json.loads(stages).items()))
        first, whole, peak_mib, _, early = app_open(trace)
        tree_mib = app_open(trace, tree=True)[3]
        print(f"the app in tmux: first painted rows {first:.2f} s "
              f"({'the first part' if early else 'all'} of the trace's), target <= 3 s; "
              f"every row {whole:.2f} s; UI peak RSS {peak_mib:.0f} MiB "
              f"({peak_mib * 2**20 / size:.3f}x the file); its process tree's summed Pss "
              f"{tree_mib:.0f} MiB ({tree_mib * 2**20 / size:.3f}x)")  # fmt: skip
        ours = medians.get("ours (open)")
        if ours and "ours (open .gz)" in medians:
            print(f"ours (open .gz) / ours (open): {medians['ours (open .gz)'][0] / ours[0]:.2f}"
                  " in time (the same JSON, gzipped)")  # fmt: skip
        if ours:
            print(f"ours (open): {ours[0]:.2f} s, target <= 3 s; {ours[1] / size:.2f}x the "
                  "file's size in peak RSS, target <= 1x")  # fmt: skip
            for name in ("json.load", "the plugin", "HTA"):
                if name in medians:
                    print(f"  ours / {name}: {ours[0] / medians[name][0]:.3f} in time, "
                          f"{ours[1] / medians[name][1]:.3f} in peak RSS")  # fmt: skip


if __name__ == "__main__":
    main()
