"""The step overview: each step's time split by priority (nothing counted twice, the
parts adding up to the step), and recommendations that name the figure behind them."""

from __future__ import annotations

import pytest

from torchscan_tui.analysis.overview import CATEGORIES, step_breakdown, step_overview
from torchscan_tui.analysis.profiler_events import RawEvent

MS = 1_000_000  # ns


def event(name, start_ms, end_ms, activity="cpu_op", device="CPU"):
    return RawEvent(name, device, False, 1, int(start_ms * MS), int(end_ms * MS), 0, 0, [],
                    False, activity)  # fmt: skip


def test_a_step_is_split_by_priority_and_adds_up():
    events = [
        event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 4),
        event("aten::linear", 4, 10),
        event("aten::mm", 5, 9),  # inside linear: CPU work once, not twice
        event("cudaLaunchKernel", 6, 7, "cuda_runtime"),
        event("sgemm_kernel", 6.5, 12, "kernel", "CUDA"),  # overlaps the runtime call
        event("Memcpy HtoD (Pageable -> Device)", 12, 13, "gpu_memcpy", "CUDA"),
        event("[memory]", 2, 2),
        event("aten::add_", 15, 16),  # 13-15: nothing ran
    ]
    step = step_breakdown(events)
    assert step["seconds"] == pytest.approx(0.016)
    expected = {"kernel": 5.5, "memcpy": 1, "memset": 0, "runtime": 0.5, "dataloader": 4,
                "cpu": 3, "other": 2}  # fmt: skip
    for name, ms in expected.items():
        assert step[name] == pytest.approx(ms / 1000), name
    assert sum(step[name] for name in CATEGORIES) == pytest.approx(step["seconds"])


def test_an_input_bound_cpu_run_is_told_so_with_its_figures():
    steps = [
        [
            event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 3),
            event("aten::mm", 3, 10),
        ],  # fmt: skip
        [
            event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 10, 12),
            event("aten::mm", 12, 20),
        ],  # fmt: skip
    ]
    overview = step_overview(steps)
    assert [s["seconds"] for s in overview["steps"]] == [pytest.approx(0.010)] * 2
    assert overview["shares"]["dataloader"] == pytest.approx(0.25)
    codes = [item["code"] for item in overview["recommendations"]]
    assert codes == ["input_bound", "cpu_only"]
    (input_bound, cpu_only) = overview["recommendations"]
    assert "25% of step time" in input_bound["because"]
    assert "aten::mm 15.000 ms" in cpu_only["because"]


def test_a_launch_bound_run_and_large_copies_are_named():
    steps = [[
        event("aten::add", 0, 10),
        event("cudaLaunchKernel", 0, 6, "cuda_runtime"),
        event("tiny", 6, 6.002, "kernel", "CUDA"),
        event("Memcpy HtoD (Pageable -> Device)", 7, 9, "gpu_memcpy", "CUDA"),
    ]]  # fmt: skip
    kernels = [
        {"kernel": "tiny", "calls": 1000, "total_seconds": 0.002, "direction": None},
        {
            "kernel": "Memcpy HtoD (Pageable -> Device)",
            "calls": 1,
            "total_seconds": 0.002,
            "direction": "HtoD",
        },  # fmt: skip
    ]
    codes = [item["code"] for item in step_overview(steps, kernels)["recommendations"]]
    assert codes == ["launch_bound", "host_to_device_copies"]


def test_no_events_no_advice():
    overview = step_overview([[]])
    assert overview["recommendations"] == [] and overview["shares"]["cpu"] is None
