"""Opening Chrome/Kineto traces: rows match key_averages of the profile that wrote them."""

from __future__ import annotations

import gzip
import io
import json
import random
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import torch
from conftest import assert_refused_in_one_line
from torch.profiler import ProfilerActivity, profile, record_function

from torchscan_tui.cli.progress_line import ProgressLine
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import ReportError, save_report
from torchscan_tui.formats.trace.columns import nanoseconds
from torchscan_tui.formats.trace.decode import exact_number

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
        ('{"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": 1}]}', "damaged"),
        ("\xff not text", "not valid JSON"),
    ],
)
def test_bad_files_get_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="latin-1")
    assert_refused_in_one_line(open_profile, path, message)


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


def _rows(report: dict) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in report["operators"])


def test_events_that_are_not_objects_or_lack_fields_are_skipped_not_fatal(tmp_path):
    trace = {
        "traceEvents": [
            "junk",
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 3, "tid": 1,
             "args": {"Input Dims": [[2, 2], [2, 2]]}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 5, "dur": 1, "tid": 1,
             "args": {"Input Dims": None}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "ts": 7, "dur": 1, "tid": "t 1"},
        ]
    }  # fmt: skip
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(trace))
    rows = {r["operator"]: r for r in open_profile(path)[0]["operators"]}
    assert rows["aten::mm"]["input_shapes"] == [[2, 2], [2, 2]]
    assert rows["aten::mm"]["cpu_self_seconds"] == pytest.approx(3e-6)
    assert rows["aten::add"]["input_shapes"] == [] and rows["aten::relu"]["calls"] == 1


def test_opening_reports_progress_stage_by_stage(tmp_path):
    _training_trace(tmp_path / "trace.json.gz.tmp")
    with (
        open(tmp_path / "trace.json.gz.tmp", "rb") as raw,
        gzip.open(tmp_path / "trace.json.gz", "wb") as packed,
    ):
        shutil.copyfileobj(raw, packed)
    heard: list[tuple[str, float]] = []
    open_profile(tmp_path / "trace.json.gz", lambda stage, done: heard.append((stage, done)))
    stages = [stage for stage, _ in heard]
    # A trace is decoded as it is read (formats/trace/stream.py): no parsing stage apart.
    assert sorted(set(stages), key=stages.index) == ["reading", "grouping"]
    for stage in ("reading", "grouping"):
        fractions = [done for name, done in heard if name == stage]
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(0 < done < 1 for name, done in heard if name == "grouping")  # it moves


def test_progress_line_rewrites_one_line_and_erases_it():
    stream = io.StringIO()
    with ProgressLine("t.json", stream, force=True) as progress:
        progress("reading", 0.0)
        progress("parsing", 1.0)
    written = stream.getvalue()
    assert "opening t.json: reading   0%" in written and "parsing 100%" in written
    assert "\n" not in written and written.endswith("\r")


def test_progress_line_is_silent_when_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with ProgressLine("t.json", stream) as progress:
        progress("reading", 0.5)
    assert stream.getvalue() == ""


def test_opening_a_report_reports_reading_then_parsing(tmp_path):
    report, _ = open_profile(DATA / "cpu_trace.json")
    save_report(report, tmp_path / "report.json")
    heard: list[tuple[str, float]] = []
    reopened, _ = open_profile(tmp_path / "report.json", lambda *step: heard.append(step))
    assert [stage for stage, _ in heard][-2:] == ["parsing", "parsing"] and heard[-1][1] == 1.0
    assert reopened["operators"] == report["operators"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1661203467502638.0", 1661203467502638),  # whole microseconds written with .0
        ("-12.0", -12),
        ("7.000", 7),
        ("12.50", 12.5),  # a float holds it to the nanosecond: no Decimal needed
        ("-999999999999.999", -999999999999.999),
        ("1000000000000.5", Decimal("1000000000000.5")),  # past 12 digits: a Decimal
        ("12.3456", Decimal("12.3456")),  # past the nanosecond
        ("1661203467502638.123", Decimal("1661203467502638.123")),
        ("1e3", Decimal("1e3")),
        ("1.5e3", Decimal("1.5e3")),
    ],
)
def test_a_number_with_a_fraction_is_read_exactly(text, value):
    number = exact_number(text)
    assert number == value and type(number) is type(value)


def test_durations_read_as_floats_give_their_nanoseconds_exactly():
    """What the float path of exact_number promises: every time written to the
    nanosecond under 10**12 us comes back as its nanosecond, as the Decimal did."""
    rng = random.Random(31)
    texts = [f"{rng.randrange(10**12)}.{rng.randrange(1000):03d}" for _ in range(20_000)]
    texts += ["999999999999.999", "0.001", "398046511103.999"]
    read = [exact_number(text) for text in texts]
    assert {type(value) for value in read} == {float, int}  # int: a fraction of zeros
    expected = [int(text.replace(".", "")) for text in texts]
    assert nanoseconds(read) == expected
    assert nanoseconds([*read, Decimal("1661203467502638.123")])[:-1] == expected


def test_a_rank_directory_says_how_many_of_its_ranks_are_read(tmp_path):
    """The line while a job's rank traces are read counts ranks, and its share follows:
    "1 of 2 ranks read  50%" (it said "rank 1 of  50%", which read as a share of ranks)."""
    from torchscan_tui.cli.open_progress import ranks_read
    from torchscan_tui.formats.ranks import open_rank_directory

    trace = json.loads((DATA / "cpu_trace.json").read_text())
    for rank in (0, 1):
        trace["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "gloo"}
        (tmp_path / f"rank-{rank}.json").write_text(json.dumps(trace))
    stream = io.StringIO()
    with ProgressLine("ranks", stream, force=True) as progress:
        assert open_rank_directory(tmp_path, ranks_read(progress), workers=1) is not None
    written = stream.getvalue()
    assert "opening ranks: 1 of 2 ranks read  50%" in written
    assert "opening ranks: 2 of 2 ranks read 100%" in written
