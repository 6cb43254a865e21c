"""The device timeline's temporal breakdown against HolisticTraceAnalysis' own figures
on every shared GPU trace (tests/data/hta_reference.json, with the command that made
them), and HTA's rules one at a time on recorded events."""

from __future__ import annotations

import pytest
from references import DATA, assert_breakdown_equals_htas, reference

from torchscan_tui.analysis.device_timeline import is_compute, temporal_breakdown
from torchscan_tui.analysis.profiler_events import EventColumns, RawEvent
from torchscan_tui.analysis.step_model import find_steps
from torchscan_tui.formats.opening import open_profile

REFERENCE = reference("hta_reference.json")


@pytest.mark.slow
@pytest.mark.parametrize("trace", sorted(REFERENCE["traces"]))
def test_each_shared_gpu_traces_breakdown_equals_htas(trace):
    theirs = REFERENCE["traces"][trace]
    report, _ = open_profile(str(DATA / trace))
    ours = report["overview"]["device_timeline"]
    assert_breakdown_equals_htas(ours, theirs["temporal_breakdown"])
    for share, key in (("idle_share", "idle_time_pctg"), ("compute_share", "compute_time_pctg")):
        assert ours[share] * 100 == pytest.approx(theirs["temporal_breakdown"][key], abs=0.01)
    if theirs["comm_comp_overlap_pctg"] is None:
        assert ours["comm_comp_overlap"] is None
    else:
        assert ours["comm_comp_overlap"] * 100 == pytest.approx(
            theirs["comm_comp_overlap_pctg"], abs=0.01
        )


def test_htas_name_patterns_decide_what_is_compute():
    assert is_compute("void at::native::vectorized_elementwise_kernel<4>")
    assert is_compute("Stream Wait Event")  # HTA's pattern, kept as it is
    for name in (
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        "Memcpy HtoD (Pinned)",
        "Memset (Device)",
        "dma_request",
        "Context Sync",
        "cudaMemcpy Memcpy",
    ):
        assert not is_compute(name), name  # fmt: skip


MS = 1_000_000


def device(name, start_ms, end_ms, correlation):
    return RawEvent(name, "CUDA", False, 7, start_ms * MS, end_ms * MS, correlation, 0, [],
                    False, "kernel")  # fmt: skip


def host(name, start_ms, end_ms, correlation=0, activity="cpu_op"):
    return RawEvent(name, "CPU", False, 1, start_ms * MS, end_ms * MS, correlation, 0, [],
                    False, activity)  # fmt: skip


def test_idle_compute_and_overlap_on_recorded_events():
    events = [
        device("sgemm", 0, 4, 1),
        device("ncclKernel_AllReduce", 2, 8, 2),  # 2 ms of it under sgemm
        device("Memcpy DtoD", 10, 12, 3),  # 8-10 idle
    ]
    result = temporal_breakdown(EventColumns.from_events(events))
    assert result["span_seconds"] == pytest.approx(0.012)
    assert result["idle_seconds"] == pytest.approx(0.002)
    assert result["compute_seconds"] == pytest.approx(0.004)
    assert result["non_compute_seconds"] == pytest.approx(0.006)
    assert result["comm_comp_overlap"] == pytest.approx(2 / 6)


def test_a_traces_last_step_device_work_is_left_out_as_hta_leaves_it():
    events = [
        host("ProfilerStep#1", 0, 10),
        host("cudaLaunchKernel", 1, 2, 1, "cuda_runtime"),
        device("sgemm", 2, 6, 1),
        host("ProfilerStep#2", 10, 20),
        host("cudaLaunchKernel", 11, 12, 2, "cuda_runtime"),
        device("sgemm", 12, 30, 2),  # launched in the last step: HTA drops it
    ]
    columns = EventColumns.from_events(events)
    result = temporal_breakdown(columns, find_steps(columns))
    assert result["span_seconds"] == pytest.approx(0.004)


def test_no_device_work_no_breakdown():
    assert temporal_breakdown(EventColumns.from_events([host("aten::mm", 0, 1)])) is None
