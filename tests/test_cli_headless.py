"""The headless command, end to end with real child processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLES, torchscan
from proc_helpers import children as child_pids
from proc_helpers import reaped

from torchscan_tui.formats.report import SCHEMA_NAME, SCHEMA_VERSION, save_report


@pytest.mark.slow
@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.py")))
def test_every_sample_workload_gives_a_report(sample, tmp_path):
    out = tmp_path / "report.json"
    result = torchscan(SAMPLES / sample, "--json", out)
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


@pytest.mark.slow
def test_memory_spike_peak_is_seen(tmp_path):
    out = tmp_path / "r.json"
    assert torchscan(SAMPLES / "memory_spike.py", "--json", out).returncode == 0
    assert json.loads(out.read_text())["totals"]["process_peak_rss"]["value"] > 256 * 2**20


@pytest.mark.slow
def test_arguments_row_limit_and_trace(tmp_path, workloads):
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    result = torchscan(
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


@pytest.mark.slow
def test_failed_workload_exits_non_zero_with_one_line(tmp_path, workloads):
    out = tmp_path / "r.json"
    result = torchscan(workloads / "raises.py", "--json", out)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("torchscan-tui: ") and "raises.py" in last
    assert "ValueError: boom from the workload" in last
    assert "Traceback" in result.stderr  # the workload's own stderr is shown


def test_existing_output_needs_force(tmp_path, workloads):
    out = tmp_path / "r.json"
    out.write_text("precious")
    result = torchscan(workloads / "tiny.py", "--json", out)
    assert result.returncode == 2
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert out.read_text() == "precious"


def test_missing_script_is_one_line(tmp_path):
    result = torchscan(tmp_path / "nope.py", "--json", tmp_path / "r.json")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"torchscan-tui: {tmp_path / 'nope.py'}: no such file; give the path of a Python script"
    )


@pytest.mark.slow
def test_a_callable_the_script_lacks_names_the_script_once(tmp_path, workloads):
    """The worker's load error names the file already; the run's message adds nothing."""
    result = torchscan(workloads / "tiny.py", "--callable", "nope", "--json", tmp_path / "r.json")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "defines no top-level nope" in last
    assert last.count("tiny.py") == 1, last


def test_a_profile_opened_without_a_terminal_prints_its_top_rows(tmp_path):
    """Piped or in a CI log, opening a profile prints what key_averages().table() would,
    in the report's rank order, with its notes; no screen is drawn and nothing waits."""
    rows = [
        {
            "operator": f"aten::op{i}",
            "input_shapes": [[i, 2]],
            "kind": "operator",
            "calls": i + 1,
            "cpu_self_seconds": (40 - i) * 1e-3,
            "device_self_seconds": None,
            "cpu_net_bytes": 1024,
        }
        for i in range(40)
    ]
    report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": rows,
        "context": {"total_grouped_operators": 40, "ranked_by": "cpu_self_seconds"},
        "diagnostics": [{"code": "no_shapes_recorded", "message": "shapes were not recorded"}],
        "totals": {"process_peak_rss": {"value": 300 * 2**20}},
    }
    save_report(report, tmp_path / "r.json")
    result = torchscan(tmp_path / "r.json")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = "r.json: 40 grouped operators, ranked by CPU self time; peak RSS 300.0 MiB"
    assert lines[0].endswith(header)
    assert lines[2].split() == ["40.000", "ms", "—", "1", "1.0", "KiB", "aten::op0", "[[0,", "2]]"]
    assert lines[32] == "... 10 more: open it in a terminal to see all"
    assert lines[33] == "note: no_shapes_recorded: shapes were not recorded"
    assert "\x1b" not in result.stdout  # no screen drawn


def test_the_app_without_a_terminal_says_how_to_run_headless(tmp_path):
    result = torchscan(SAMPLES / "mlp.py")
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr and "--json OUT" in result.stderr


@pytest.mark.slow
def test_a_device_asked_for_by_name_and_not_there_fails_headless(tmp_path, workloads):
    """Issue 20, bug 8: --device cuda on a CPU-only torch exited 0, silently."""
    out = tmp_path / "r.json"
    result = torchscan(workloads / "tiny.py", "--device", "cuda", "--json", out)
    assert result.returncode == 1
    assert (
        "--device cuda: CUDA was asked for, but this torch sees no CUDA device"
        in (result.stderr.strip().splitlines()[-1])
    )
    assert json.loads(out.read_text())["operators"]  # the CPU-side rows are kept
    auto = torchscan(workloads / "tiny.py", "--device", "auto", "--json", out, "--force")
    assert auto.returncode == 0, auto.stderr


def test_the_installed_command_points_at_a_callable_main():
    """The script pip writes names ``torchscan_tui.cli:main``: a move must keep it (an
    installed script from before it was left pointing at nothing)."""
    import importlib
    import re
    import subprocess
    import sys
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    target = re.search(r'^torchscan-tui = "([\w.]+):(\w+)"$', pyproject, re.M)
    assert target and target.groups() == ("torchscan_tui.cli", "main")
    assert callable(getattr(importlib.import_module(target.group(1)), target.group(2)))
    code = "import sys; from torchscan_tui.cli import main; sys.exit(main(['--help']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("usage: torchscan-tui")


@pytest.mark.slow
def test_headless_on_a_terminal_says_the_live_rss_in_place(tmp_path):
    """Issue 20, 11: headless on a terminal rewrites its progress line with the sampled
    RSS while run 2 of 2 goes on (a log gets a plain line per phase, tested elsewhere)."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    workload = Path(__file__).parent / "workloads" / "slow_start.py"
    process = subprocess.Popen(
        [sys.executable, "-m", "torchscan_tui", str(workload), "--json", str(tmp_path / "r.json")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(timeout=120) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "run 2 of 2, the whole script for peak RSS" in text
    # The first sample can come as the child has just started (232 KiB in a CI run,
    # where torch's NumPy warning then took the last line and no later sample was shown).
    assert re.search(r"RSS now \d+\.\d [KMG]iB sampled\)", text), text
    assert "\x1b[1A\r\x1b[K" in text  # rewritten in place, not a line per sample


@pytest.mark.slow
def test_a_long_warm_up_writes_a_few_step_lines_to_a_log_not_one_a_step(workloads, tmp_path):
    """Issue 26, point 12: a 100k-step warm-up wrote one progress line per step to a
    stderr that is no terminal."""
    done = torchscan(workloads / "quick_steps.py", "--warmup", 3000, "--steps", 2, "--json",
                     tmp_path / "r.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    steps = [line for line in done.stderr.splitlines() if ": step " in line]
    assert 1 <= len(steps) < 30 and steps[-1].split("(")[0].endswith("step 3002 of 3002 ")


def test_multi_node_options_need_nproc_per_node(tmp_path):
    """Issue 26, point 12: --nnodes without --nproc-per-node was silently ignored."""
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    done = torchscan(script, "--nnodes", 2, "--json", tmp_path / "r.json")
    assert done.returncode == 2
    assert "need --nproc-per-node N" in done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_flops_reach_the_report_when_asked(tmp_path):
    """Issue 28, point 10: --flops reaches the worker's profiler; each matmul row then
    has its FLOPs and FLOP/s, and every row its inclusive CPU time."""
    out = tmp_path / "r.json"
    result = torchscan(SAMPLES / "mlp.py", "--flops", "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["context"]["flops_counted"] is True
    addmm = [row for row in report["operators"] if row["operator"] == "aten::addmm"]
    assert addmm and all(row["flops"] > 0 and row["flops_per_second"] > 0 for row in addmm)
    assert all(row["cpu_total_seconds"] >= row["cpu_self_seconds"] for row in report["operators"])


def _cpu_trace(path: Path, events: int) -> None:
    """A trace of ``events`` CPU ops, each nested in the one before it by twos."""
    event = (
        '{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": {ts}, '
        '"dur": {dur}, "args": {{"Input Dims": [[2, 2], [2, 2]]}}}}'
    )
    body = ",\n".join(
        event.format(ts=10 * (index // 2) + index % 2, dur=8 - 2 * (index % 2))
        for index in range(events)
    )
    path.write_text('{"traceEvents": [\n' + body + "\n]}\n")


def _reading(pid: int, trace: Path) -> bool:
    """Whether ``pid`` has ``trace`` open."""
    for descriptor in Path(f"/proc/{pid}/fd").glob("*"):
        try:
            if os.readlink(descriptor) == str(trace.resolve()):
                return True
        except OSError:  # closed as it was read
            pass
    return False


@pytest.mark.parametrize(
    ("when", "events"),
    [
        ("reading", 400_000),
        ("grouping", 400_000),
        # 70 MiB: its second half read by a child (formats/trace/halves.py)
        pytest.param("second half", 500_000, marks=pytest.mark.slow),
    ],
)
def test_a_conversion_interrupted_with_ctrl_c_ends_in_one_line(tmp_path, when, events):
    """Ctrl-C while a big trace is read (its second half in a child, past 64 MiB), or
    grouped with its summaries made in a child beside it (formats/trace/reader.py),
    ends the command with one line and code 130, no traceback, no report or temp file,
    and no child left."""
    trace, out = tmp_path / "big.json", tmp_path / "out" / "report.json"
    out.parent.mkdir()
    _cpu_trace(trace, events)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchscan_tui", str(trace), "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children = _interrupt_when(process, trace, when)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        f"torchscan-tui: {trace}: conversion interrupted (Ctrl-C)"
    )
    assert list(out.parent.iterdir()) == []
    assert all(reaped(child) for child in children)


def test_a_trace_opened_for_its_text_interrupted_with_ctrl_c_ends_in_one_line(tmp_path):
    """The same for a trace opened before the app would start, here printing its top rows
    to a pipe (no terminal): one line, code 130, no traceback."""
    trace = tmp_path / "big.json"
    _cpu_trace(trace, 400_000)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchscan_tui", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _interrupt_when(process, trace, "reading")
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert stderr.strip().splitlines()[-1] == (
        f"torchscan-tui: {trace}: opening interrupted (Ctrl-C)"
    )


@pytest.mark.slow  # two 56 MB rank traces written first
def test_a_rank_directory_interrupted_with_ctrl_c_ends_in_one_line(tmp_path):
    """Ctrl-C while a directory of rank traces opens in its process pool: one line, code
    130, no traceback from the command or its workers, no worker left."""
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank in (0, 1):
        _cpu_trace(folder / f"rank-{rank}.pt.trace.json", 400_000)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchscan_tui", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline, workers = time.monotonic() + 30, []
    while not any(_reading(worker, folder / "rank-0.pt.trace.json") for worker in workers):
        assert process.poll() is None and time.monotonic() < deadline, "no rank read"
        time.sleep(0.002)
        workers = child_pids(process.pid)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert stderr.strip().splitlines()[-1] == (
        f"torchscan-tui: {folder}: opening interrupted (Ctrl-C)"
    )
    assert all(reaped(worker) for worker in workers)


def _interrupt_when(process: subprocess.Popen, trace: Path, when: str) -> list[int]:
    """Send ``process`` a SIGINT once it reads ``trace``; "grouping": once a child works
    beside it; "second half": once a child reads the trace too. Its children then."""
    deadline = time.monotonic() + 30
    while not _reading(process.pid, trace):
        assert process.poll() is None and time.monotonic() < deadline, "never read the trace"
        time.sleep(0.002)
    children: list[int] = []
    while when != "reading" and not children:
        assert process.poll() is None and time.monotonic() < deadline, "no child beside"
        time.sleep(0.002)
        children = child_pids(process.pid)
        if when == "second half":
            children = [child for child in children if _reading(child, trace)]
    process.send_signal(signal.SIGINT)
    return children
