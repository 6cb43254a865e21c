"""Issue 30 (the part built): the allocator's timeline over the window, its peak, and
what was held at the peak, from a real profile and by hand."""

from __future__ import annotations

import json

import pytest
from conftest import torchscan

from torchscan_tui.analysis.memory_timeline import (
    TIMELINE_POINTS,
    Allocation,
    StepSpan,
    held_at,
    memory_block,
)
from torchscan_tui.formats.opening import open_profile


def alloc(t, ptr, nbytes, total, op="aten::ones", shapes=None, device="cpu"):
    return Allocation(t, ptr, nbytes, total, device, op, shapes or [[4]])


def test_the_peak_its_step_and_what_it_held_by_hand():
    records = [
        alloc(10, 1, 100, 1100),  # 1000 were held before the window
        alloc(20, 2, 400, 1500, op="aten::mm", shapes=[[2, 2], [2, 2]]),
        alloc(30, 3, 50, 1550),
        alloc(40, 2, -400, 1150, op=None),
        alloc(50, 9, -1000, 150, op=None),  # made before the window: freed, never held
    ]
    steps = [StepSpan("1", 0, 25), StepSpan("2", 26, 60)]
    (cpu,) = memory_block(records, steps, origin_ns=0)["devices"]
    assert cpu["peak_bytes"] == 550 and cpu["peak_total_bytes"] == 1550
    assert cpu["peak_step"] == "2" and cpu["peak_seconds"] == 30e-9
    assert cpu["final_bytes"] == -850  # what the window's allocs and frees add up to
    assert cpu["start_total_bytes"] == 1000
    held = cpu["held_at_peak"]
    assert [(h["operator"], h["size"], h["bytes"], h["count"]) for h in held] == [
        ("aten::mm", 400, 400, 1), ("aten::ones", 100, 100, 1), ("aten::ones", 50, 50, 1),
    ]  # fmt: skip
    assert held_at(records)[0]["operator"] == "aten::ones"  # at the end: only ones' held


def test_a_long_timeline_keeps_its_peak_and_its_end():
    records = [alloc(t, t, 1, t + 1) for t in range(5000)]
    records.insert(2500, alloc(2500, 99999, 10_000, 12_500))
    (cpu,) = memory_block(records, [], 0)["devices"]
    assert len(cpu["timeline"]) <= TIMELINE_POINTS + 1
    assert max(level for _, level in cpu["timeline"]) == cpu["peak_bytes"]
    assert cpu["timeline"][-1][1] == cpu["final_bytes"]


def test_devices_apart_and_none_without_allocations():
    records = [alloc(1, 1, 8, 8), alloc(2, 2, 64, 64, device="cuda:0")]
    block = memory_block(records, [], 0)
    assert [d["device"] for d in block["devices"]] == ["cpu", "cuda:0"]
    assert memory_block([], [], 0) is None


@pytest.mark.slow
def test_a_known_tensor_at_a_known_step_is_the_peak_and_its_top_line(workloads, tmp_path):
    """The done-when: the peak is the step that held the tensor, the table's top line the
    op that made it with its size, exactly in bytes; the timeline ends at the sum of the
    rows' net bytes."""
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    result = torchscan(workloads / "known_alloc.py", "--json", out, "--warmup", "1",
                       "--steps", "5", "--trace", trace)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    (cpu,) = [d for d in report["memory"]["devices"] if d["device"] == "cpu"]
    assert cpu["peak_step"] == "4"
    top = cpu["held_at_peak"][0]
    assert top["operator"] == "aten::ones" and top["bytes"] == top["size"] == 4_000_000
    net = sum(row["cpu_net_bytes"] for row in report["operators"])
    assert cpu["final_bytes"] == net
    assert "memory: cpu allocator peak" in result.stderr
    # Point 6: the run's own trace (profile_memory) opens to the same peak and table.
    reopened, _ = open_profile(trace)
    (again,) = [d for d in reopened["memory"]["devices"] if d["device"] == "cpu"]
    assert again["held_known"] is True
    # A trace numbers the window's steps from 1: it does not know the warm-up before them.
    assert again["peak_bytes"] == cpu["peak_bytes"] and again["peak_step"] == "3"
    assert again["held_at_peak"][0] == top


@pytest.mark.slow  # over a second: the fast subset stays under a minute
def test_a_2021_trace_gives_its_curve_and_peak_but_nothing_held():
    """Point 6 on the shared ResNet-50 trace: its [memory] instants have Bytes only (no
    Addr, no Total Allocated). The curve is the running sum, its peak the one computed
    here from the trace's JSON; nothing can be said held."""
    import gzip
    from pathlib import Path

    path = Path(__file__).parent / "data" / "resnet50_2021_cuda.pt.trace.json.gz"
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    by_device: dict[int, list] = {}
    for event in events:
        if event.get("name") == "[memory]" and event.get("ph") == "i":
            by_device.setdefault(event["args"]["Device Type"], []).append(event)
    peaks = {}
    for device_type, instants in by_device.items():
        running, peak = 0, 0
        for event in sorted(instants, key=lambda e: e["ts"]):
            running += event["args"]["Bytes"]
            peak = max(peak, running)
        peaks[device_type] = peak
    report, _ = open_profile(path)
    devices = {d["device"]: d for d in report["memory"]["devices"]}
    assert devices["cpu"]["peak_bytes"] == peaks[0]
    assert all(d["held_known"] is False and d["held_at_peak"] == [] for d in devices.values())
