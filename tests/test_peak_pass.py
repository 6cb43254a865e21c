"""The profile first, then the peak pass (issue 28, 1 and 13): rows within seconds of a
window's first steps; the peak pass runs the script whole and unprofiled, says its steps
(the clean step times), and can be ended early without failing the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import WORKLOADS, torchscan

from torchscan_tui.analysis.step_summary import startup_words, unprofiled_line
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.events import PhaseChanged, RowsReceived, RunFinished
from torchscan_tui.run.handoff import HandoffFile, handoff_env
from torchscan_tui.run.peak_steps import read_peak_steps
from torchscan_tui.run.rank_files import PEAK_STEPS
from torchscan_tui.run.session import Session

ROOT = Path(__file__).resolve().parents[1]


def test_the_peak_passs_step_lines_are_read_back_whole_and_in_order():
    said = read_peak_steps("1 2.5\n2 2.75\nnot ours\n3 3.0\n7 9.0\n4 3.25\nstopped 4\n5 3.")
    assert said.steps == 4 and said.stopped_at == 4  # "7 9.0" is not the next step
    assert said.step_seconds == pytest.approx([0.25, 0.25, 0.25])
    assert said.first_step_end == 2.5 and said.startup_seconds == pytest.approx(2.25)
    empty = read_peak_steps("")
    assert (empty.steps, empty.startup_seconds, empty.step_seconds) == (0, None, [])
    assert empty.torch_import_seconds is None
    timed = read_peak_steps("import torch 0.1 2.25\nimport torch x y\n1 3.0\n2 3.5\n")
    assert timed.torch_import_seconds == 2.25 and timed.steps == 2


def test_the_start_up_is_said_with_its_import_of_torch():
    """Issue 28, point 11: py-spy showed import torch at 36% of a nanoGPT run, which the
    profiled window never sees."""
    run = {"unprofiled_steps": {"steps": 4, "median_seconds": 0.2, "min_seconds": 0.1,
                                "max_seconds": 0.3, "startup_seconds": 4.1,
                                "torch_import_seconds": 2.3}}  # fmt: skip
    assert startup_words(run) == "about 4.1 s before the first (import torch 2.3 s)"
    assert unprofiled_line(run).endswith("; about 4.1 s before the first (import torch 2.3 s)")
    assert startup_words({}) is None


def peak_pass(tmp_path: Path, script: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    steps = HandoffFile(tempfile.mkdtemp(dir=tmp_path), PEAK_STEPS)
    env = handoff_env([steps], {**os.environ, "PYTHONPATH": str(ROOT)})
    done = subprocess.run(
        [sys.executable, "-m", "torchscan_tui.worker.peak_pass", *args, str(script)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    said = steps.read_all(1 << 20).decode()
    steps.close()
    return done, said


@pytest.mark.slow
def test_the_peak_pass_says_each_step_and_stops_where_asked(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(4, 4)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(5):\n"
        "    model(torch.ones(2, 4)).sum().backward(); opt.step()\n"
        "    print('stepped', step + 1, flush=True)\n"
    )
    done, said = peak_pass(tmp_path, script)
    assert done.returncode == 0, done.stderr
    assert read_peak_steps(said).steps == 5 and done.stdout.count("stepped") == 5
    # The script's import of torch, timed as it ran: before its first step ended.
    steps = read_peak_steps(said)
    assert steps.torch_import_seconds is not None and steps.first_step_end is not None
    assert 0.01 < steps.torch_import_seconds < steps.first_step_end
    done, said = peak_pass(tmp_path, script, "--stop-at", "3")
    assert done.returncode == 0 and done.stdout.count("stepped") == 2  # ended inside step 3
    assert read_peak_steps(said).stopped_at == 3


def test_the_peak_pass_imports_nothing_heavy_for_a_script_without_torch(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(
        "import sys\nprint(sorted(m for m in ('torch', 'numpy') if m in sys.modules))\n"
    )
    done, said = peak_pass(tmp_path, script)
    assert done.returncode == 0 and done.stdout.strip() == "[]" and said == ""


def run_in_thread(config: RunConfig) -> tuple[Session, list, threading.Thread]:
    events: list = []
    session = Session(config, events.append)
    runner = threading.Thread(target=lambda: events.append(("end", session.run())), daemon=True)
    runner.start()
    return session, events, runner


def wait_until(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


@pytest.mark.slow
def test_rows_come_before_the_peak_pass_which_a_stop_ends_without_failing_the_run():
    config = RunConfig(script=str(WORKLOADS / "long_train.py"), device="cpu",
                       args=("1", "2000", "0.05"))  # fmt: skip
    session, events, runner = run_in_thread(config)
    try:
        wait_until(lambda: session.measuring_peak)
        rows_at = next(i for i, e in enumerate(events) if isinstance(e, RowsReceived))
        assert rows_at < events.index(PhaseChanged("measuring"))  # the rows came first
        time.sleep(6.0)  # torch imported again, then some steps of the peak pass
        assert session.stop_peak_pass("you")
        runner.join(60)
    finally:
        session.cancel()
        session.cleanup()
    finished = events[-1][1]
    assert isinstance(finished, RunFinished) and finished.outcome == "done", finished.message
    run = finished.report["run"]
    status = run["rss_status"]
    assert status["stopped_by"] == "you" and status["steps"] > 5
    assert finished.report["totals"]["process_peak_rss"]["value"] > 0  # the kernel's figure
    clean = run["unprofiled_steps"]
    assert clean["median_seconds"] == pytest.approx(0.05, rel=0.6)  # each step sleeps 50 ms
    assert finished.report["operators"]


@pytest.mark.slow
def test_headless_prints_the_rows_first_and_timeout_ends_only_the_peak_pass(tmp_path):
    out = tmp_path / "r.json"
    started = time.monotonic()
    done = torchscan(WORKLOADS / "long_train.py", "--json", out, "--timeout", "30",
                     "--", "1", "4000", "0.05")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60  # the whole run would take 200 s
    summary = done.stderr.index("torchscan-tui: the profile is in: ")
    assert summary < done.stderr.index("run 2 of 2, the whole script for peak RSS")
    last = done.stderr.strip().splitlines()[-1]
    assert "stopped by --timeout" in last and "steps unprofiled: median" in last, last
    report = json.loads(out.read_text())
    assert report["run"]["rss_status"]["stopped_by"] == "--timeout"
    assert report["run"]["complete"] and report["operators"]
