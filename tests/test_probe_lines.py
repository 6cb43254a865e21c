"""Issue 28, point 12: Kineto's own USDT probe lines, from the profiler this tool turned
on, are said once and counted, not shown as the workload's output each time."""

from __future__ import annotations

from torchscan_tui.run.probe_lines import ProbeLines

START = "USDT:2026-12-01 19:38:47 22074:22074 SyncActivityProfilerHandler.cpp:52] profiler_start"
STOP = "USDT:2026-12-01 19:38:47 22074:22074 SyncActivityProfilerHandler.cpp:59] profiler_stop"


def test_the_first_probe_line_is_named_the_rest_counted_the_workloads_kept():
    probes = ProbeLines()
    kept = [probes.keep(line) for line in (START, "loss 0.5", STOP, START, STOP, "done")]
    assert kept[0] is not None and kept[0].startswith(START)
    assert "the profiler this tool started" in kept[0]
    assert kept[1:] == ["loss 0.5", None, None, None, "done"]
    assert probes.summary() == "(Kineto wrote 3 more profiler start/stop probe lines, folded)"


def test_a_workload_line_that_only_looks_alike_is_kept_and_one_probe_needs_no_summary():
    probes = ProbeLines()
    assert (
        probes.keep("USDT: my own profiler_start marker!") == "USDT: my own profiler_start marker!"
    )
    assert probes.keep(START) is not None and probes.summary() is None
