"""measure_peak_rss and MeasuredCommand with real child processes."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from proc_helpers import alive

from torchscan_tui.run.process import CommandFailed, MeasuredCommand, measure_peak_rss

MiB = 1024 * 1024


def test_peak_rss_is_the_kernel_figure_in_bytes(python, workloads):
    metric = measure_peak_rss([python, str(workloads / "allocates.py"), "80"])
    assert metric["unit"] == "bytes"
    assert metric["name"] == "process_peak_rss"
    assert "ru_maxrss" in metric["source"]
    assert 80 * MiB < metric["value"] < 200 * MiB
    assert metric["command"][1].endswith("allocates.py")
    assert 0 < metric["launcher_floor"] < 40 * MiB


@pytest.mark.slow
def test_large_caller_does_not_inflate_the_child(python, workloads):
    ballast = bytearray(1024 * MiB)
    for index in range(0, len(ballast), 4096):
        ballast[index] = 1
    metric = measure_peak_rss([python, str(workloads / "allocates.py"), "50"])
    assert metric["value"] < 200 * MiB, metric
    assert metric["value"] > 50 * MiB
    del ballast


def test_non_zero_exit_raises_with_the_status_and_the_figure(python):
    with pytest.raises(CommandFailed) as caught:
        measure_peak_rss([python, "-c", "import sys; sys.exit(3)"])
    assert caught.value.returncode == 3
    assert "exited with status 3" in str(caught.value)
    assert caught.value.rss["value"] > 0


def test_death_by_signal_names_the_signal(python):
    with pytest.raises(CommandFailed) as caught:
        measure_peak_rss([python, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert caught.value.returncode == -signal.SIGKILL
    assert "killed by SIGKILL" in str(caught.value)


def test_os_exit_code_is_kept(python):
    with pytest.raises(CommandFailed) as caught:
        measure_peak_rss([python, "-c", "import os; os._exit(7)"])
    assert caught.value.status.exit_code == 7


def test_missing_command_raises_file_not_found():
    with pytest.raises(FileNotFoundError) as caught:
        measure_peak_rss(["/definitely/not/here"])
    assert caught.value.filename == "/definitely/not/here"


def test_no_shell_is_used(python, tmp_path):
    marker = tmp_path / "marker"
    metric = measure_peak_rss(
        [python, "-c", "import sys; print(sys.argv[1])", f"$(touch {marker})"]
    )
    assert metric["value"] > 0
    assert not marker.exists()


def test_other_platforms_raise_before_launching(monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(NotImplementedError):
        measure_peak_rss([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert not marker.exists()


def test_captured_output_is_streamed_line_by_line_and_sanitised(python):
    lines: list[tuple[str, str]] = []
    code = "import sys\nprint('one')\nprint('\\x1b[2Jtwo', file=sys.stderr)\nprint('three')"
    result = MeasuredCommand([python, "-c", code], on_output=lambda s, t: lines.append((s, t)))
    outcome = result.start().wait()
    assert outcome.status.ok
    assert [t for s, t in lines if s == "stdout"] == ["one", "three"]
    assert [t for s, t in lines if s == "stderr"] == ["\\x1b[2Jtwo"]
    assert outcome.wall_seconds > 0
    assert outcome.rss["value"] > 0


def test_captured_run_has_no_stdin_and_no_terminal(python):
    lines: list[str] = []
    code = (
        "import os, sys\n"
        "print('stdin:', repr(sys.stdin.read()))\n"
        "try:\n    os.open('/dev/tty', os.O_RDWR); print('tty: yes')\n"
        "except OSError: print('tty: no')\n"
    )
    MeasuredCommand([python, "-c", code], on_output=lambda s, t: lines.append(t)).start().wait()
    assert lines == ["stdin: ''", "tty: no"]


def test_samples_rss_while_running(python, workloads):
    samples: list[tuple[float, int]] = []
    code = "import time; x = bytearray(30 * 1024 * 1024); time.sleep(0.6)"
    command = MeasuredCommand(
        [python, "-c", code], on_sample=lambda t, r: samples.append((t, r)), sample_interval=0.05
    )
    result = command.start().wait()
    assert len(samples) >= 3
    assert result.samples == samples
    # /proc VmRSS uses per-CPU counters that may lag or lead by a few hundred KiB, so a
    # sample can read slightly above the kernel's exact high-water mark; never by much.
    assert max(rss for _, rss in samples) <= result.rss["value"] * 1.05
    assert max(rss for _, rss in samples) > 30 * MiB


def test_cancel_ends_the_command_and_its_grandchildren(python):
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "daemon = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "print(child.pid, daemon.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    lines: list[str] = []
    command = MeasuredCommand(
        [python, "-c", code], on_output=lambda s, t: lines.append(t), grace_seconds=0.5
    ).start()
    deadline = time.monotonic() + 20
    while not lines and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(pid) for pid in lines[0].split()]
    started = time.monotonic()
    command.cancel()
    result = command.wait()
    assert time.monotonic() - started < 5
    assert result.status.cancelled
    assert result.status.describe() == "cancelled"
    assert not any(alive(pid) for pid in pids + [command.pid])


def test_leftover_descendants_are_reaped_when_the_command_exits(python):
    code = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
    )
    lines: list[str] = []
    result = (
        MeasuredCommand(
            [python, "-c", code], on_output=lambda s, t: lines.append(t), grace_seconds=0.3
        )
        .start()
        .wait()
    )
    assert result.status.ok
    assert result.leftover_processes == 1
    assert not alive(int(lines[0]))


def test_a_flood_of_output_never_stalls_the_child(python):
    count = 0

    def on_output(stream: str, text: str) -> None:
        nonlocal count
        count += 1

    code = "import sys\nfor i in range(200000): sys.stdout.write('x' * 50 + '\\n')\n"
    code += "sys.stderr.write('y' * 100000)\n"
    result = MeasuredCommand([python, "-c", code], on_output=on_output).start().wait()
    assert result.status.ok
    assert count == 200000 + 2  # the long line's start, then what it had more


@pytest.mark.skipif(os.geteuid() == 0, reason="root may execute any file; untestable as root")
def test_non_executable_command_raises_permission_error(tmp_path):
    script = tmp_path / "not_exec"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        measure_peak_rss([str(script)])


@pytest.mark.slow
def test_output_lines_are_kept_as_a_terminal_leaves_them(python, workloads):
    """Issue 26, point 11: a progress bar's 25 MB of carriage-return updates (tqdm) came
    as 6,000 pieces of 4 KiB, and l then took seconds to draw them. A carriage return
    starts the line over, and an overlong line keeps its start and says what it had."""
    said: list[tuple[str, str]] = []
    command = [python, str(workloads / "progress_bar.py")]
    MeasuredCommand(command, on_output=lambda *line: said.append(line)).start().wait()
    stdout = [text for stream, text in said if stream == "stdout"]
    bar = [text for stream, text in said if stream == "stderr" and text.startswith("training")]
    assert bar == ["training: 100.00%|" + "#" * 39 + " " * 21 + "| 249999/250000"]
    assert stdout == ["x" * 4096, "[... 5,995,904 more bytes of the line above, not kept]",
                      "done training"]  # fmt: skip
    assert sum(len(text) for _, text in said) < 10_000
