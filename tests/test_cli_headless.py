"""The headless command, end to end with real child processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import SAMPLES


def headless(*argv, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.py")))
def test_every_sample_workload_gives_a_report(sample, tmp_path):
    out = tmp_path / "report.json"
    result = headless(SAMPLES / sample, "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["operators"]
    assert report["totals"]["process_peak_rss"]["value"] > 50 * 2**20
    assert report["workload"]["script"].endswith(sample)
    assert report["workload"]["torch_version"]
    assert report["context"]["row_limit"] is None
    assert report["context"]["total_grouped_operators"] == len(report["operators"])
    assert report["run"]["complete"] is True
    # No --trace: no trace written to a directory about to be removed, none recorded.
    assert report["trace_path"] is None


def test_memory_spike_peak_is_seen(tmp_path):
    out = tmp_path / "r.json"
    assert headless(SAMPLES / "memory_spike.py", "--json", out).returncode == 0
    assert json.loads(out.read_text())["totals"]["process_peak_rss"]["value"] > 256 * 2**20


def test_arguments_row_limit_and_trace(tmp_path, workloads):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    result = headless(
        workloads / "script_only.py",
        "--json",
        out,
        "--row-limit",
        "2",
        "--trace",
        trace,
        "--",
        "a",
        "--b",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert len(report["operators"]) == 2
    assert report["workload"]["args"] == ["a", "--b"]
    assert "script_only args: ['a', '--b']" in result.stderr
    assert json.loads(trace.read_text())["traceEvents"]


def test_failed_workload_exits_non_zero_with_one_line(tmp_path, workloads):
    out = tmp_path / "r.json"
    result = headless(workloads / "raises.py", "--json", out)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("torchscan-tui: ") and "raises.py" in last
    assert "ValueError: boom from the workload" in last
    assert "Traceback" in result.stderr  # the workload's own stderr is shown


def test_existing_output_needs_force(tmp_path, workloads):
    out = tmp_path / "r.json"
    out.write_text("precious")
    result = headless(workloads / "tiny.py", "--json", out)
    assert result.returncode == 2
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert out.read_text() == "precious"


def test_missing_script_is_one_line(tmp_path):
    result = headless(tmp_path / "nope.py", "--json", tmp_path / "r.json")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"torchscan-tui: {tmp_path / 'nope.py'}: no such file; give the path of a Python script"
    )


def test_a_callable_the_script_lacks_names_the_script_once(tmp_path, workloads):
    """The worker's load error names the file already; the run's message adds nothing."""
    result = headless(workloads / "tiny.py", "--callable", "nope", "--json", tmp_path / "r.json")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "defines no top-level nope" in last
    assert last.count("tiny.py") == 1, last
