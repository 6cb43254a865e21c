"""profile_workload with real torch: the report the spec describes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity

from torchscan_tui import profile_workload
from torchscan_tui.analysis import diagnostics
from torchscan_tui.worker import profiling
from torchscan_tui.worker.profiling import WorkloadError

inputs = torch.ones(32, 64)
weights = torch.ones(64, 64)


def test_spec_example_rows_and_context(tmp_path):
    trace = tmp_path / "profile.json"
    report = profile_workload(lambda: inputs @ weights, device="cpu", trace_path=trace)
    rows = report["operators"]
    mm = [row for row in rows if row["operator"] == "aten::mm"]
    assert mm and mm[0]["input_shapes"] == [[32, 64], [64, 64]]
    assert mm[0]["calls"] == 1 and mm[0]["kind"] == "operator"
    assert mm[0]["cpu_self_seconds"] > 0
    assert mm[0]["device_self_seconds"] is None
    assert mm[0]["cpu_net_bytes"] == 32 * 64 * 4
    assert [row["cpu_self_seconds"] for row in rows] == sorted(
        (row["cpu_self_seconds"] for row in rows), reverse=True
    )
    context = report["context"]
    assert context["device"] == "cpu"
    assert context["ranked_by"] == "cpu_self_seconds"
    assert context["total_grouped_operators"] == len(rows)
    assert context["activities"] == ["CPU"]
    assert context["torch_version"] == torch.__version__
    assert report["trace_path"] == str(trace)
    assert json.loads(trace.read_text())["traceEvents"]
    assert trace.stat().st_mode & 0o777 == 0o600


def test_row_limit_keeps_the_total():
    def work():
        for size in range(1, 10):
            torch.ones(size, 2).sum()

    report = profile_workload(work, row_limit=3)
    assert len(report["operators"]) == 3
    assert report["context"]["row_limit"] == 3
    assert report["context"]["total_grouped_operators"] > 3


def test_the_callable_runs_exactly_once():
    calls = []
    profile_workload(lambda: calls.append(torch.ones(2).sum()))
    assert len(calls) == 1


def test_an_exception_stops_the_profiler_and_keeps_the_rows():
    def failing():
        torch.ones(3, 3).sum()
        raise ValueError("boom")

    with pytest.raises(WorkloadError) as caught:
        profile_workload(failing)
    assert isinstance(caught.value.original, ValueError)
    assert any(row["operator"] == "aten::sum" for row in caught.value.report["operators"])
    assert not torch.autograd.profiler._is_profiler_enabled
    assert profile_workload(lambda: torch.ones(1).sum())["operators"]


def test_cuda_requested_without_cuda_activity_is_none_with_a_diagnostic_mock_gpu(monkeypatch):
    """A GPU is there (mocked) but the profiler lacks CUDA activity support."""
    monkeypatch.setattr("torch.profiler.supported_activities", lambda: {ProfilerActivity.CPU})
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    monkeypatch.setattr("torch.cuda.synchronize", lambda: None)
    report = profile_workload(lambda: inputs @ weights, device="cuda")
    codes = [note["code"] for note in report["diagnostics"]]
    assert "cuda_activity_unsupported" in codes
    assert all(row["device_self_seconds"] is None for row in report["operators"])
    assert report["context"]["ranked_by"] == "cpu_self_seconds"
    assert report["operators"][0]["diagnostics"][0]["code"] == "cuda_activity_unsupported"


def test_cuda_requested_on_a_cpu_only_torch_says_so():
    """Issue 20, bug 8: --device cuda on this CPU-only torch said only 'device cuda done'."""
    report = profile_workload(lambda: inputs @ weights, device="cuda")
    (note,) = [n for n in report["diagnostics"] if n["code"] == "cuda_unavailable"]
    assert "torch.cuda.is_available() is False" in note["message"]
    assert all(row["device_self_seconds"] is None for row in report["operators"])


def test_mps_rows_describe_cpu_dispatch_only_mock_gpu():
    report = profile_workload(lambda: inputs @ weights, device="mps")
    assert [n["code"] for n in report["diagnostics"]] == ["mps_cpu_dispatch_only"]
    assert "torch.mps.profiler" in report["diagnostics"][0]["message"]
    assert all(
        row["diagnostics"][0]["code"] == "mps_cpu_dispatch_only" for row in report["operators"]
    )
    assert all(row["device_self_seconds"] is None for row in report["operators"])


def test_threads_started_by_the_workload_are_flagged():
    import threading

    def work():
        thread = threading.Thread(target=lambda: torch.ones(8).sum())
        thread.start()
        thread.join()
        stay = threading.Event()
        threading.Thread(target=stay.wait, args=(0.5,), daemon=True).start()

    report = profile_workload(work)
    assert "threads_not_profiled" in [note["code"] for note in report["diagnostics"]]


def test_choose_activities_for_cuda_when_supported_mock_gpu(monkeypatch):
    supported = {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    monkeypatch.setattr("torch.profiler.supported_activities", lambda: supported)
    assert ProfilerActivity.CUDA in profiling.choose_activities("cuda")
    assert profiling.choose_activities("cpu") == [ProfilerActivity.CPU]


def test_cuda_active_but_no_kernel_ran_is_said_mock_gpu():
    notes = diagnostics.report_diagnostics(
        device="cuda",
        cuda_requested_unsupported=False,
        cuda_active=True,
        device_events=0,
        threads_started=False,
        children_ran=False,
    )
    assert [note["code"] for note in notes] == ["no_device_events"]
    assert "stayed on the CPU" in notes[0]["message"]


def test_dataloader_worker_processes_are_flagged():
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.ones(8, 2)), batch_size=4, num_workers=2)

    def work():
        for (batch,) in loader:
            batch.sum()

    report = profile_workload(work)
    codes = [note["code"] for note in report["diagnostics"]]
    assert "processes_not_profiled" in codes or "threads_not_profiled" in codes
    assert "processes_not_profiled" in codes


def test_persistent_dataloader_workers_are_flagged_too():
    """Issue 16, point 16: persistent workers are never reaped during the profile, so
    their CPU time was not in RUSAGE_CHILDREN and no note said they were not profiled."""
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(
        TensorDataset(torch.ones(8, 2)), batch_size=4, num_workers=2, persistent_workers=True
    )

    def work():
        for (batch,) in loader:
            batch.sum()

    report = profile_workload(work)
    assert "processes_not_profiled" in [note["code"] for note in report["diagnostics"]]


def test_a_profile_with_no_rows_says_why():
    """Issue 16, point 13: a workload running its own torch.profiler gave 0 rows, silently."""
    from torch.profiler import profile

    def own_profiler():
        with profile():
            torch.ones(4, 4).mm(torch.ones(4, 4))

    report = profile_workload(own_profiler)
    assert report["operators"] == []
    (note,) = [n for n in report["diagnostics"] if n["code"] == "no_rows"]
    assert "its own torch.profiler" in note["message"]


def test_event_cap_is_recorded(monkeypatch):
    monkeypatch.setenv("TORCHSCAN_MAX_EVENTS", "5")
    report = profile_workload(lambda: [torch.ones(2).sum() for _ in range(10)])
    assert report["context"]["max_events"] == 5
    assert report["context"]["events"] > 5 and report["context"]["events_grouped"] == 5
    assert "events_truncated" in [note["code"] for note in report["diagnostics"]]


def test_invalid_torch_trace_falls_back_to_an_escaping_writer_fake_export(tmp_path, monkeypatch):
    """torch 2.13 escapes names itself; a fake export stands in for versions that did not."""
    original = torch.profiler.profile.export_chrome_trace

    def broken_export(self, path):
        original(self, path)
        with open(path, "a") as handle:
            handle.write('{"name": "a"b"}')

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", broken_export)
    trace = tmp_path / "t.json"

    def work():
        with torch.profiler.record_function('quote"and\x01control'):
            torch.ones(2).sum()

    report = profile_workload(work, trace_path=trace)
    data = json.loads(trace.read_text())
    names = {event["name"] for event in data["traceEvents"]}
    assert 'quote"and\x01control' in names and "aten::sum" in names
    assert "trace_rewritten" in [note["code"] for note in report["diagnostics"]]
    assert trace.stat().st_mode & 0o777 == 0o600


def test_a_torch_trace_with_bytes_not_utf8_keeps_torchs_trace_fake_export(tmp_path, monkeypatch):
    """torch 2.13 names a frame of its own threads with such bytes now and then
    (with_stack); the fake export writes one into a real export, on demand. The bytes are
    written as U+FFFD and the rest of torch's file is kept (not our lossy rewrite)."""
    original = torch.profiler.profile.export_chrome_trace

    def export_with_a_stray_byte(self, path):
        original(self, path)
        data = Path(path).read_bytes()
        assert b'"name": "aten::sum"' in data
        Path(path).write_bytes(data.replace(b'"name": "aten::sum"', b'"name": "aten::sum\x8f"'))

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", export_with_a_stray_byte)
    trace = tmp_path / "t.json"
    report = profile_workload(lambda: torch.ones(2).sum(), trace_path=trace)
    data = json.loads(trace.read_bytes())
    names = {event["name"] for event in data["traceEvents"]}
    assert "aten::sum\ufffd" in names and "aten::sum" not in names
    assert "note" not in data.get("otherData", {}), "torch's file, not our writer's"
    assert data.get("schemaVersion") is not None and data.get("baseTimeNanoseconds") is not None
    codes = [note["code"] for note in report["diagnostics"]]
    assert "trace_bytes_replaced" in codes and "trace_rewritten" not in codes
    assert trace.stat().st_mode & 0o777 == 0o600


def test_the_whole_call_has_no_rows_of_ours():
    """Without a step window no marker event is recorded (it would be a row)."""
    report = profile_workload(lambda: torch.ones(3, 3).sum())
    assert not any(row["operator"].startswith("[torchscan]") for row in report["operators"])
    assert "steps" not in report["context"]


def test_flops_are_counted_when_asked_and_none_otherwise():
    """Issue 28, point 10: FLOPs as torch counts them (2·M·K·N for a matmul), with the
    FLOP/s they achieved over the op's inclusive time; not asked, None (never 0)."""
    a, b = torch.ones(8, 16), torch.ones(16, 32)

    def matmul(report):
        (row,) = [r for r in report["operators"] if r["operator"] == "aten::mm"]
        return row

    counted = matmul(profile_workload(lambda: a @ b, with_flops=True))
    assert counted["flops"] == 2 * 8 * 16 * 32
    assert counted["flops_per_second"] == pytest.approx(
        counted["flops"] / counted["cpu_total_seconds"]
    )
    assert counted["cpu_total_seconds"] >= counted["cpu_self_seconds"] > 0
    plain = profile_workload(lambda: a @ b)
    assert matmul(plain)["flops"] is None and matmul(plain)["flops_per_second"] is None
    assert plain["context"]["flops_counted"] is False
