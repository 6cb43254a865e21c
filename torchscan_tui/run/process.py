"""Whole-process peak RSS of a command, read from the kernel (no torch, no textual).

Two ways in:

* :func:`measure_peak_rss` is the spec's function: argv, no shell, streams inherited,
  failures raise, no deadline, a metric dict back.
* :class:`MeasuredCommand` is the TUI's variant: the command's stdout and stderr are
  captured and streamed line by line to a callback, RSS is sampled for a sparkline, and
  the run can be cancelled (SIGTERM to every descendant, SIGKILL after a grace period).

Both launch through :mod:`torchscan_tui.run._launcher`, a tiny intermediate process, so the
figure is the command's own high-water mark and not the caller's RSS at fork time.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchscan_tui.common.text import decode_output_line
from torchscan_tui.run.oom import likely_oom, oom_kill_count

if TYPE_CHECKING:  # the launcher's side stays free of msgspec
    from torchscan_tui.formats.report_schema import ExitStatus as ExitStatusDict
    from torchscan_tui.formats.report_schema import PeakRss

LAUNCHER_PATH = Path(__file__).with_name("_launcher.py")
RSS_SOURCE = "kernel wait4() ru_maxrss: the largest single process among those reaped"
OUTPUT_LINE_LIMIT = 4096
_READ_CHUNK = 65536
OOM_NOTE = "likely out of memory: the cgroup's OOM killer fired"

OutputCallback = Callable[[str, str], None]
"""Called as ``callback(stream, line)`` with stream ``"stdout"`` or ``"stderr"``."""
SampleCallback = Callable[[float, int], None]
"""Called as ``callback(seconds_since_start, rss_bytes)`` for each RSS sample."""


class CommandFailed(subprocess.CalledProcessError):
    """The measured command exited non-zero or was killed by a signal.

    ``rss`` still holds the peak the kernel reported, since a failed run's memory is
    often exactly what the user came to see.
    """

    def __init__(self, command: Sequence[str], status: ExitStatus, rss: PeakRss):
        super().__init__(status.returncode, list(command))
        self.status = status
        self.rss = rss

    def __str__(self) -> str:
        return f"{self.cmd[0]!s}: {self.status.describe()}"


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended, decoded from the raw wait status."""

    exit_code: int | None
    signal_number: int | None
    cancelled: bool = False
    likely_oom: bool = False  # SIGKILL while the cgroup's OOM-kill count rose

    @classmethod
    def from_wait_status(
        cls, status: int, cancelled: bool = False, oom_kills_rose: bool = False
    ) -> ExitStatus:
        if os.WIFSIGNALED(status):
            signal_number = os.WTERMSIG(status)
            oom = oom_kills_rose and signal_number == signal.SIGKILL
            return cls(None, signal_number, cancelled, oom)
        return cls(os.WEXITSTATUS(status), None, cancelled)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.cancelled

    @property
    def returncode(self) -> int:
        """Popen's convention: negative signal number for a death by signal."""
        return -self.signal_number if self.signal_number is not None else int(self.exit_code or 0)

    @property
    def signal_name(self) -> str | None:
        if self.signal_number is None:
            return None
        try:
            return signal.Signals(self.signal_number).name
        except ValueError:
            return f"signal {self.signal_number}"

    def describe(self) -> str:
        if self.cancelled:
            return "cancelled"
        if self.signal_number is not None:
            if self.likely_oom:
                return f"killed by {self.signal_name} ({OOM_NOTE})"
            return f"killed by {self.signal_name}"
        return f"exited with status {self.exit_code}"

    def to_dict(self) -> ExitStatusDict:
        return {
            "exit_code": self.exit_code,
            "signal": self.signal_name,
            "cancelled": self.cancelled,
            "likely_oom": self.likely_oom,
            "description": self.describe(),
        }


@dataclass
class CommandResult:
    """Everything known once a measured command has been reaped."""

    command: list[str]
    status: ExitStatus
    rss: PeakRss
    wall_seconds: float
    leftover_processes: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)


def _check_platform() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "darwin"
    raise NotImplementedError(
        f"peak RSS needs per-child OS accounting (Linux or macOS); {sys.platform} has none"
    )


def _to_bytes(raw: int, platform: str) -> int:
    """Linux reports ru_maxrss in KiB, macOS in bytes."""
    return raw * 1024 if platform == "linux" else raw


def build_rss_metric(
    command: Sequence[str], exited: dict, floor_raw: int, platform: str
) -> PeakRss:
    """The metric dict the spec describes, from the launcher's ``exited`` report."""
    return {
        "name": "process_peak_rss",
        "value": _to_bytes(exited["maxrss"], platform),
        "unit": "bytes",
        "source": RSS_SOURCE,
        "command": list(command),
        "command_process_value": _to_bytes(exited["command_maxrss"], platform),
        "launcher_floor": _to_bytes(floor_raw, platform),
        "platform": platform,
    }


def _launcher_argv(command: Sequence[str], result_fd: int, grace: float, new_group: bool):
    argv = [sys.executable, "-I", "-S", str(LAUNCHER_PATH), "--result-fd", str(result_fd)]
    argv += ["--grace", repr(grace)]
    if new_group:
        argv.append("--new-group")
    return argv + ["--", *command]


def _read_report(result_read: int) -> list[dict]:
    with os.fdopen(result_read, "rb") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _raise_exec_error(command: Sequence[str], report: dict) -> None:
    code = report["errno"]
    message = report["message"] or os.strerror(code)
    exc_type = {2: FileNotFoundError, 13: PermissionError}.get(code, OSError)
    raise exc_type(code, message, command[0])


def _interpret(
    command: Sequence[str], reports: list[dict], platform: str, oom_before: int | None = None
) -> CommandResult:
    by_event = {report["event"]: report for report in reports}
    if "exec_error" in by_event:
        _raise_exec_error(command, by_event["exec_error"])
    if "exited" not in by_event:
        raise RuntimeError(
            f"the measuring launcher for {command[0]!s} ended without a result "
            "(was it killed from outside?)"
        )
    exited = by_event["exited"]
    oom_rose = likely_oom(oom_before, oom_kill_count()) if oom_before is not None else False
    status = ExitStatus.from_wait_status(exited["status"], exited["cancelled"], oom_rose)
    rss = build_rss_metric(command, exited, by_event["started"]["floor"], platform)
    return CommandResult(
        list(command), status, rss, exited["wall_seconds"], exited.get("leftovers", 0)
    )


def measure_peak_rss(command: Sequence[str]) -> PeakRss:
    """Run ``command`` (argv, no shell) to completion and return its peak RSS metric.

    Standard streams are inherited. A non-zero exit raises :class:`CommandFailed` (a
    ``subprocess.CalledProcessError`` that names the signal for a death by signal); a
    command that cannot start raises ``FileNotFoundError``/``PermissionError``. There is
    no deadline. Descendants still alive when the command exits are terminated.
    """
    command = [os.fspath(part) for part in command]
    if not command:
        raise ValueError("measure_peak_rss needs a non-empty argv list")
    platform = _check_platform()
    oom_before = oom_kill_count()
    result_read, result_write = os.pipe()
    try:
        launcher = subprocess.Popen(
            _launcher_argv(command, result_write, 1.0, new_group=False), pass_fds=[result_write]
        )
    finally:
        os.close(result_write)
    reports = _read_report(result_read)
    launcher.wait()
    result = _interpret(command, reports, platform, oom_before)
    if not result.status.ok:
        raise CommandFailed(command, result.status, result.rss)
    return result.rss


def _read_rss_bytes(pid: int) -> int | None:
    """Current resident set of one process from /proc (Linux); None where unavailable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def as_shown(line: bytes) -> bytes:
    """A line as a terminal leaves it: what a carriage return wrote over is gone (a line
    ending CRLF keeps its text)."""
    line = line.rstrip(b"\r")
    cut = line.rfind(b"\r")
    return line[cut + 1 :] if cut >= 0 else line


def _overlong(rest: bytes, skipped: int) -> bytes:
    """The end of a line whose start was passed on: how much of it was not kept."""
    return f"[... {skipped + len(rest):,} more bytes of the line above, not kept]".encode()


class MeasuredCommand:
    """A command run through the launcher with captured output, sampling and cancel.

    ``start()`` launches it; ``wait()`` blocks until it and its descendants are reaped and
    returns a :class:`CommandResult` (or raises ``FileNotFoundError``/``PermissionError``
    when it could not start). ``cancel()`` may be called from any thread.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        on_output: OutputCallback | None = None,
        on_sample: SampleCallback | None = None,
        sample_interval: float = 0.1,
        grace_seconds: float = 1.0,
        pass_fds: Sequence[int] = (),
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ):
        self.command = [os.fspath(part) for part in command]
        if not self.command:
            raise ValueError("MeasuredCommand needs a non-empty argv list")
        self._platform = _check_platform()
        self._on_output = on_output
        self._on_sample = on_sample
        self._sample_interval = sample_interval
        self._grace = grace_seconds
        self._pass_fds = tuple(pass_fds)
        self._env = env
        self._cwd = cwd
        self._launcher: subprocess.Popen | None = None
        self._threads: list[threading.Thread] = []
        self._reports: list[dict] = []
        self._started_pid: int | None = None
        self._pid_known = threading.Event()
        self._finished = threading.Event()
        self._samples: list[tuple[float, int]] = []
        self._cancel_requested = False
        self._oom_before: int | None = None

    @property
    def pid(self) -> int | None:
        """PID of the command itself (not the launcher), once it has started."""
        return self._started_pid

    def start(self) -> MeasuredCommand:
        self._oom_before = oom_kill_count()
        result_read, result_write = os.pipe()
        try:
            self._launcher = subprocess.Popen(
                _launcher_argv(self.command, result_write, self._grace, new_group=True),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(result_write, *self._pass_fds),
                start_new_session=True,
                env=self._env,
                cwd=self._cwd,
            )
        except BaseException:
            os.close(result_read)
            raise
        finally:
            os.close(result_write)
        self._spawn(self._read_results, result_read)
        self._spawn(self._drain, "stdout", self._launcher.stdout)
        self._spawn(self._drain, "stderr", self._launcher.stderr)
        if self._on_sample is not None and self._platform == "linux":
            self._spawn(self._sample)
        return self

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read_results(self, result_read: int) -> None:
        with os.fdopen(result_read, "rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                report = json.loads(line)
                self._reports.append(report)
                if report["event"] == "started":
                    self._started_pid = report["pid"]
                    self._pid_known.set()
        self._pid_known.set()
        self._finished.set()

    def _drain(self, stream: str, pipe) -> None:
        """Read a pipe to EOF so a chatty command never blocks on a full pipe.

        Lines are passed on as a terminal leaves them: a carriage return starts the line
        over (a progress bar's thousands of states are one line, its last), and a line
        longer than :data:`OUTPUT_LINE_LIMIT` keeps its start and says how much more it
        had (a 25 MB line was 6,000 pieces of 4 KiB the log pane then had to draw)."""
        pending = b""
        skipped = 0  # bytes of an overlong line not kept
        fd = pipe.fileno()
        while True:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._emit(stream, _overlong(line, skipped) if skipped else as_shown(line))
                skipped = 0
            pending = as_shown(pending)
            if len(pending) > OUTPUT_LINE_LIMIT:
                if not skipped:
                    self._emit(stream, pending[:OUTPUT_LINE_LIMIT])
                skipped += len(pending) - (0 if skipped else OUTPUT_LINE_LIMIT)
                pending = b""
        if pending or skipped:
            self._emit(stream, _overlong(pending, skipped) if skipped else pending)
        pipe.close()

    def _emit(self, stream: str, raw: bytes) -> None:
        if self._on_output is None:
            return
        for start in range(0, max(len(raw), 1), OUTPUT_LINE_LIMIT):
            self._on_output(stream, decode_output_line(raw[start : start + OUTPUT_LINE_LIMIT]))

    def _sample(self) -> None:
        self._pid_known.wait()
        pid = self._started_pid
        started = time.monotonic()
        on_sample = self._on_sample
        assert on_sample is not None  # started only when there is one
        while pid is not None and not self._finished.is_set():
            rss = _read_rss_bytes(pid)
            if rss is not None:
                moment = (time.monotonic() - started, rss)
                self._samples.append(moment)
                on_sample(*moment)
            self._finished.wait(self._sample_interval)

    def cancel(self) -> None:
        """Ask the launcher to end the command and all its descendants."""
        self._cancel_requested = True
        launcher = self._launcher
        if launcher is not None and launcher.poll() is None:
            try:
                launcher.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass

    def wait(self) -> CommandResult:
        if self._launcher is None:
            raise RuntimeError("MeasuredCommand.wait() before start()")
        self._launcher.wait()
        for thread in self._threads:
            thread.join()
        result = _interpret(self.command, self._reports, self._platform, self._oom_before)
        if self._cancel_requested and not result.status.cancelled:
            result.status = dataclasses.replace(result.status, cancelled=True)
        result.samples = list(self._samples)
        return result
