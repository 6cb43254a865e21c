"""Opening Chrome/Kineto traces: rows match key_averages of the profile that wrote them."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from torchscan_tui.report import ReportError
from torchscan_tui.trace_import import open_profile

DATA = Path(__file__).parent / "data"


def _training_trace(path: Path):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(8, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:
        for _ in range(4):
            with record_function("step"):
                model(batch).sum().backward()
                optimizer.step()
                optimizer.zero_grad()
    p.export_chrome_trace(str(path))
    return p


def test_rows_from_a_trace_match_key_averages(tmp_path):
    prof = _training_trace(tmp_path / "trace.json")
    report, source = open_profile(tmp_path / "trace.json")
    assert source == str(tmp_path / "trace.json")
    ours = {(r["operator"], str(r["input_shapes"])): r for r in report["operators"]}
    reference = {
        (e.key, str(e.input_shapes)): e for e in prof.key_averages(group_by_input_shape=True)
    }
    assert set(ours) == set(reference)
    for key, event in reference.items():
        row = ours[key]
        assert row["calls"] == event.count, key
        assert row["cpu_net_bytes"] == event.self_cpu_memory_usage, key
        # The trace keeps nanoseconds to 3 decimals of a microsecond: equal within rounding.
        assert abs(row["cpu_self_seconds"] * 1e6 - event.self_cpu_time_total) < 0.01 * event.count
        assert row["device_self_seconds"] is None
    assert [n["code"] for n in report["diagnostics"]] == ["no_device_events_in_trace"]


def test_the_stored_cpu_trace_opens_with_shapes():
    report, _ = open_profile(DATA / "cpu_trace.json")
    rows = {(r["operator"], str(r["input_shapes"])): r for r in report["operators"]}
    assert rows[("aten::mm", "[[4, 8], [8, 2]]")]["calls"] == 1
    assert rows[("blk", "[]")]["kind"] == "annotation"
    assert report["context"]["source"] == "chrome trace"


def test_gzipped_trace_and_trace_handler_directory(tmp_path):
    folder = tmp_path / "tb"
    folder.mkdir()
    data = (DATA / "cpu_trace.json").read_bytes()
    with gzip.open(folder / "host_1.pt.trace.json.gz", "wb") as handle:
        handle.write(data)
    report, source = open_profile(folder)
    assert source.endswith("host_1.pt.trace.json.gz")
    assert any(row["operator"] == "aten::mm" for row in report["operators"])


def test_cuda_excerpt_links_kernels_to_their_op_mock_gpu():
    """Hand-checked Kineto-format excerpt (no GPU here): see tests/data/README.md."""
    report, _ = open_profile(DATA / "cuda_trace_excerpt.json")
    rows = {r["operator"]: r for r in report["operators"]}
    assert set(rows) == {
        "forward",
        "aten::mm",
        "cudaLaunchKernel",
        "aten::copy_",
        "cudaMemcpyAsync",
    }
    assert rows["aten::mm"]["device_self_seconds"] == pytest.approx(120.5e-6)
    assert rows["aten::mm"]["cpu_self_seconds"] == pytest.approx(42e-6)  # 50 - 8 (runtime)
    assert rows["aten::copy_"]["device_self_seconds"] == pytest.approx(12.25e-6)
    assert rows["cudaLaunchKernel"]["kind"] == "runtime"
    assert rows["forward"]["device_self_seconds"] == 0.0
    assert rows["forward"]["cpu_self_seconds"] == pytest.approx(110e-6)  # 200 - 50 - 40
    assert rows["aten::mm"]["cpu_net_bytes"] == 0  # the memory event is on the GPU
    assert report["context"]["ranked_by"] == "device_self_seconds"
    assert report["operators"][0]["operator"] == "aten::mm"
    assert report["diagnostics"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"traceEvents": [{"ph": "X", "name"', "truncated trace"),
        ('{"traceEvents": []}', "holds no profiler events"),
        ('{"something": 1}', "is not a torchscan-tui report"),
    ],
)
def test_bad_files_get_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReportError, match=message) as caught:
        open_profile(path)
    assert "\n" not in str(caught.value)


def test_the_command_refuses_a_bad_profile_in_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    result = subprocess.run(
        [sys.executable, "-m", "torchscan_tui", str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not valid JSON" in result.stderr


def test_empty_trace_directory(tmp_path):
    with pytest.raises(ReportError, match="holds no .json"):
        open_profile(tmp_path)
    shutil.rmtree(tmp_path)
