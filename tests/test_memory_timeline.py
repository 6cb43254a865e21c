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
    out = tmp_path / "r.json"
    result = torchscan(workloads / "known_alloc.py", "--json", out, "--warmup", "1",
                       "--steps", "5")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    (cpu,) = [d for d in report["memory"]["devices"] if d["device"] == "cpu"]
    assert cpu["peak_step"] == "4"
    top = cpu["held_at_peak"][0]
    assert top["operator"] == "aten::ones" and top["bytes"] == top["size"] == 4_000_000
    net = sum(row["cpu_net_bytes"] for row in report["operators"])
    assert cpu["final_bytes"] == net
    assert "memory: cpu allocator peak" in result.stderr
