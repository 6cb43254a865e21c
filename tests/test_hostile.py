"""Hostile workloads and bad input, headless: clear errors, no orphans, nothing lost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from channel import line, read_dicts
from proc_helpers import gone_within, wait_for_file
from replay import make_row

from torchscan_tui.run.oom import likely_oom, oom_kill_count
from torchscan_tui.run.process import ExitStatus


def headless(*argv, cwd=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "torchscan_tui", *map(os.fsdecode, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def last_line(result) -> str:
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.slow  # a live run: a subprocess importing torch
def test_syntax_error_names_file_and_line(workloads, tmp_path):
    result = headless(workloads / "syntax_error.py", "--json", tmp_path / "r.json")
    assert result.returncode == 1
    line = last_line(result)
    # The profile goes first: its worker names the file, the line and the error.
    assert f"{workloads / 'syntax_error.py'}:3: syntax error: invalid syntax" in line


@pytest.mark.slow
def test_script_path_starting_with_a_dash(tmp_path):
    script = tmp_path / "-dash.py"
    script.write_text("def workload():\n    import torch\n    torch.ones(2).sum()\n")
    result = headless("-dash.py", "--json", "r.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["operators"]


@pytest.mark.slow
def test_non_utf8_file_name(tmp_path):
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_text("def workload():\n    import torch\n    torch.ones(3).sum()\n")
    result = headless(name, "--json", "r.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["operators"] and report["workload"]["script"].endswith(".py")
    # torch's Python tracer raised out of every call of such a file's functions: the
    # step traced for call sites runs without it, and names the file with its byte escaped
    assert report["operators"][0]["sites"][0]["site"].endswith("caf\\xe9.py(3): workload")


def test_a_traceback_through_a_non_utf8_file_name_still_travels():
    """The worker died encoding a workload's traceback whose file name is not UTF-8
    (lone surrogates): the message travels with them escaped."""
    from torchscan_tui.run.protocol import ErrorMessage, decode, encode

    name = os.fsdecode(b"caf\xe9.py")
    message = ErrorMessage("workload", "RuntimeError: boom", f'File "{name}"')
    decoded = decode(encode(message))
    assert isinstance(decoded, ErrorMessage)
    assert decoded.traceback == 'File "caf\\udce9.py"' and decoded.message == message.message


@pytest.mark.slow
def test_timeout_cancels_a_never_ending_workload(workloads, tmp_path):
    pids_file = tmp_path / "pids"
    started = time.monotonic()
    result = headless(
        workloads / "sleeps.py", "--json", tmp_path / "r.json", "--timeout", "4", "--", pids_file
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 124
    assert "timed out after 4 s" in last_line(result)
    assert "cancelled" in last_line(result) and "failed" not in last_line(result)
    pids = [int(pid) for pid in pids_file.read_text().split()]
    assert gone_within(pids, 3)


def start_headless_sleeper(workloads, tmp_path, **popen):
    """A headless run of a never-ending workload, and the pids of it and its grandchild."""
    pids_file = tmp_path / "pids"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchscan_tui",
            str(workloads / "sleeps.py"),
            "--json",
            str(tmp_path / "r.json"),
            "--",
            str(pids_file),
        ],
        **popen,
    )
    return process, [int(pid) for pid in wait_for_file(pids_file).split()]


@pytest.mark.slow
def test_sigterm_to_headless_cancels_and_reaps_grandchildren(workloads, tmp_path):
    process, pids = start_headless_sleeper(
        workloads, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 130
    assert "cancelled" in stderr.strip().splitlines()[-1]
    assert gone_within(pids, 3)


@pytest.mark.slow  # a live run: a subprocess importing torch
def test_a_killed_ui_process_takes_the_workload_with_it(workloads, tmp_path):
    """Even SIGKILL of our process ends the run: the launcher has a parent-death signal."""
    process, pids = start_headless_sleeper(
        workloads, tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    process.kill()
    process.wait()
    assert gone_within(pids, 5)


@pytest.mark.slow
def test_worker_killed_mid_run_is_incomplete_not_success(workloads, tmp_path):
    out = tmp_path / "r.json"
    result = headless(workloads / "dies_in_worker.py", "--json", out)
    assert result.returncode == 1
    line = last_line(result)
    assert "no complete result from the profile worker" in line
    assert "killed by SIGKILL" in line and "marked incomplete" in line
    report = json.loads(out.read_text())
    assert report["run"]["complete"] is False


@pytest.mark.slow
def test_workload_closing_the_channel_ends_incomplete(workloads, tmp_path):
    out = tmp_path / "r.json"
    result = headless(workloads / "closes_fds.py", "--json", out)
    assert result.returncode == 1
    assert "no complete result" in last_line(result)
    assert json.loads(out.read_text())["run"]["complete"] is False


@pytest.mark.slow
def test_keyboard_interrupt_in_workload_delivers_rows_and_code(workloads, tmp_path):
    out = tmp_path / "r.json"
    result = headless(workloads / "interrupts.py", "--json", out)
    assert result.returncode == 1
    assert "KeyboardInterrupt" in last_line(result)
    report = json.loads(out.read_text())
    assert any(row["input_shapes"] == [[3, 5], []] for row in report["operators"])


def test_partial_last_message_is_discarded():
    read_fd, write_fd = os.pipe()
    rows = [make_row("a", [], 1, 0.5)]
    os.write(write_fd, line({"type": "rows", "rows": rows}) + b'{"type": "rows", "ro')
    os.close(write_fd)
    assert read_dicts(read_fd) == [{"type": "rows", "rows": rows}]
    os.close(read_fd)


@pytest.mark.slow
def test_a_huge_message_does_not_deadlock_the_reader():
    row = make_row("x" * 1000, [[1] * 1000] * 2000, 1, 0.5)
    message = {"type": "rows", "rows": [row] * 5}
    read_fd, write_fd = os.pipe()
    writer = threading.Thread(
        target=lambda: (os.write(write_fd, line(message)), os.close(write_fd))
    )
    writer.start()
    received = read_dicts(read_fd)
    writer.join(timeout=30)
    os.close(read_fd)
    assert received == [message]


def test_sigkill_is_named_out_of_memory_when_the_cgroup_counter_rose_fake_cgroup(tmp_path):
    """No OOM can be provoked safely here: a fake cgroup tree stands in for the kernel's."""
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    proc_cgroup = open("/proc/self/cgroup").read()
    if not any(line.startswith("0::") for line in proc_cgroup.splitlines()):
        (tmp_path / "memory").mkdir()
        (tmp_path / "memory" / "memory.oom_control").write_text("oom_kill_disable 0\noom_kill 2\n")
    assert oom_kill_count(root=tmp_path) == 2
    assert likely_oom(1, 2) and not likely_oom(2, 2) and not likely_oom(None, 3)
    status = ExitStatus.from_wait_status(signal.SIGKILL, oom_kills_rose=True)
    assert status.describe() == (
        "killed by SIGKILL (likely out of memory: the cgroup's OOM killer fired)"
    )
    assert ExitStatus.from_wait_status(signal.SIGKILL).describe() == "killed by SIGKILL"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_terminal_hangup_leaves_nothing_running(workloads, tmp_path):
    pids_file = tmp_path / "pids"
    socket = f"torchscan-hup-{os.getpid()}"
    command = (
        f"exec env -u COLUMNS -u LINES {sys.executable} -m torchscan_tui "
        f"{workloads / 'sleeps.py'} -- {pids_file}"
    )
    subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
            command,
        ],
        check=True,
    )
    try:
        pids = [int(pid) for pid in wait_for_file(pids_file).split()]
        panes = subprocess.run(
            ["tmux", "-L", socket, "list-panes", "-F", "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        )
        app = int(panes.stdout.split()[0])  # exec: the pane's process is the app itself
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    assert gone_within(pids, 5)
    assert gone_within([app], 5), "the app outlived its terminal"


@pytest.mark.slow
def test_forged_channel_messages_fail_the_run_and_keep_its_rows(workloads, tmp_path):
    """Issue 16, point 4: a workload writing message-shaped lines to fds 3-20 reached the
    channel and crashed a headless run (KeyError, no report). Now the first message that
    is not the worker's fails the run, in one line, and the report is still written."""
    out = tmp_path / "r.json"
    result = headless(workloads / "forges_messages.py", "--json", out)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    line = last_line(result)
    assert "the profile channel carried a message the worker did not send" in line
    report = json.loads(out.read_text())
    assert report["run"]["complete"] is False


def test_the_channel_checks_each_message_type():
    from torchscan_tui.run.protocol import NotAMessage, RowsMessage, decode

    row = {"operator": "a", "input_shapes": [], "calls": 1, "cpu_self_seconds": 0.0,
           "device_self_seconds": None, "cpu_net_bytes": 0}  # fmt: skip
    assert decode(line({"type": "rows", "rows": [row]})) == RowsMessage([row])
    for forged, says in [
        ({"type": "rows"}, "Object missing required field `rows`"),
        ({"type": "rows", "rows": [row, 1]}, r"Expected `object`, got `int` - at `\$.rows\[1\]`"),
        ({"type": "meta"}, "the 'meta' message: Object missing required field `head`"),
        ({"type": "meta", "head": {"context": {"row_limit": "x"}}}, "context.row_limit"),
        ({"type": "phase", "phase": "pwned"}, "the 'phase' message"),
        ({"type": "error", "message": 5}, "the 'error' message"),
        ({"type": "surprise"}, "the 'surprise' message"),
    ]:
        with pytest.raises(NotAMessage, match=says):
            decode(line(forged))


def _survivors(name: bytes = b"torchscan-hop") -> int:
    """Live processes named ``name`` (zombies left to an init that never reaps are dead)."""
    count = 0
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        comm = stat[stat.find(b"(") + 1 : stat.rfind(b")")]
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        count += comm == name and state not in (b"Z", b"X")
    return count


@pytest.mark.slow
@pytest.mark.parametrize("cancel", [False, True])
def test_a_pid_hopping_daemon_is_ended_whole(workloads, tmp_path, cancel):
    """Issue 16, point 11: a daemon that setsid()s, ignores SIGTERM and SIGHUP and
    re-forks every 0.5 ms, its parent exiting, escaped each single kill pass: the run hung
    (40+ s) and the launcher and the daemon stayed behind. Stopping before killing ends it,
    whether the workload returns or the run is cancelled."""
    assert _survivors() == 0
    extra = ["--timeout", "3"] if cancel else []
    env = dict(os.environ, HOP_WAIT="30" if cancel else "0.2")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "torchscan_tui", str(workloads / "hopping_daemon.py"),
         "--json", str(tmp_path / "r.json"), *extra],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=env,
    )  # fmt: skip
    assert time.monotonic() - started < 30, result.stderr
    assert result.returncode == (124 if cancel else 0), result.stderr
    deadline = time.monotonic() + 5
    while _survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _survivors() == 0
    if not cancel:
        assert json.loads((tmp_path / "r.json").read_text())["run"]["profile_leftovers"] >= 1
