"""Workloads whose call alone does no work, or leaves work running (issue 16, 12 and 13):
real child processes, real torch, through the command."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow  # real workloads: seconds each

WORKLOADS = {
    "async_workload.py": "import torch\nasync def workload():\n"
    "    torch.ones(4, 4).mm(torch.ones(4, 4))\n",
    "generator_workload.py": "import torch\ndef workload():\n    for _ in range(3):\n"
    "        yield torch.ones(4, 4).mm(torch.ones(4, 4))\n",
    "own_profiler.py": "import torch\nfrom torch.profiler import profile\ndef workload():\n"
    "    with profile():\n        torch.ones(4, 4).mm(torch.ones(4, 4))\n",
    "leaves_a_thread.py": "import threading, time, torch\ndef workload():\n"
    "    torch.ones(4, 4).mm(torch.ones(4, 4))\n"
    "    threading.Thread(target=time.sleep, args=(3600,), name='forever').start()\n",
}


def _headless(folder, name, *extra):
    (folder / name).write_text(WORKLOADS[name])
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", name, "--json", "r.json", *extra],
        capture_output=True, text=True, cwd=folder, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "code"),
    [("async_workload.py", "workload_awaited"), ("generator_workload.py", "workload_iterated")],
)
def test_a_coroutine_or_generator_workload_is_driven_and_said(tmp_path, name, code):
    done = _headless(tmp_path, name)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    mm = [row for row in report["operators"] if row["operator"] == "aten::mm"]
    assert mm and mm[0]["calls"] == (1 if name.startswith("async") else 3)
    assert code in [note["code"] for note in report["diagnostics"]]


def test_a_workload_that_profiles_itself_gives_its_own_profile(tmp_path):
    """It nested a second profiler under ours and both got nothing (0 rows); its own
    profile is now adopted as the report's."""
    done = _headless(tmp_path, "own_profiler.py")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert "script_profiler_adopted" in [note["code"] for note in report["diagnostics"]]
    assert any(row["operator"] == "aten::mm" for row in report["operators"])


def test_an_empty_profile_is_no_success_headless(tmp_path):
    (tmp_path / "idle.py").write_text("def workload():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "torchscan_tui", "idle.py", "--json", "r.json"],
        capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "no rows. The profile holds no operator" in done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert "no_rows" in [note["code"] for note in report["diagnostics"]]


def test_a_thread_that_never_ends_does_not_keep_the_run_alive(tmp_path):
    started = time.monotonic()
    done = _headless(tmp_path, "leaves_a_thread.py")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    report = json.loads((tmp_path / "r.json").read_text())
    (note,) = [n for n in report["diagnostics"] if n["code"] == "threads_left_running"]
    # warmed up once, profiled once, then traced once for call sites: workload() ran
    # three times, each left its thread
    assert "3 non-daemon thread(s) running (forever, forever, forever)" in note["message"]
    assert any(row["operator"] == "aten::mm" for row in report["operators"])


@pytest.mark.parametrize("seconds", ["0.001", "0.01", "0.03", "0.1"])
def test_a_cancel_at_any_moment_ends_cleanly(tmp_path, seconds):
    """Issue 16, point 17: --timeout 0.01 cancelled before the launcher set up its
    handlers: a RuntimeError and an IndexError traceback."""
    done = _headless(tmp_path, "async_workload.py", "--timeout", seconds)
    assert done.returncode == 124, done.stderr
    assert "Traceback" not in done.stderr
    assert f"timed out after {float(seconds):g} s" in done.stderr
