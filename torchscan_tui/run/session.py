"""One run of a workload: the RSS child, then the profile worker (no torch, no textual).

:class:`Session` drives both child processes and reports everything that happens as typed
events to one callback, from worker threads; the UI turns them into Textual messages and
the headless CLI into a report. ``cancel()`` may be called from any thread.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.common.line_tail import LineTail
from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report import head_of, new_report
from torchscan_tui.formats.report_schema import ExitStatus, Report, RunStatus
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.distributed import (
    PEAK_BYTES,
    peak_and_step,
    read_ranks,
    torchrun_failure,
)
from torchscan_tui.run.events import (
    EventCallback,
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RowsReplaced,
    RssMeasured,
    RssSampled,
    RunFinished,
)
from torchscan_tui.run.handoff import HandoffFile, handoff_env
from torchscan_tui.run.phases import Outcome, Phase
from torchscan_tui.run.private_dir import PrivateDir
from torchscan_tui.run.process import CommandResult, MeasuredCommand
from torchscan_tui.run.protocol import (
    DoneMessage,
    ErrorMessage,
    HeadMessage,
    InvalidMessage,
    PhaseMessage,
    RowsMessage,
    apply_head,
    read_messages,
)
from torchscan_tui.run.rank_files import RSS_STOPPED, channel_name, rss_name
from torchscan_tui.run.rank_tail import RankTail, follow_ranks

MAX_STORED_SAMPLES = 240
STDERR_TAIL_LINES = 20  # the workload's last stderr lines, for a failure's message
_TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')


def failure_message(script: str, how: str, stderr_tail: Sequence[str]) -> str:
    """One line for a failed workload: how it ended, its last stderr line, and where.

    For an exception or a syntax error the last ``File "...", line N`` of the traceback
    says where; it is appended as ``(at FILE:LINE)``.
    """
    message = f"{script}: the workload {how}"
    lines = [line.strip() for line in stderr_tail if line.strip()]
    if lines:
        message += f": {lines[-1]}"
    for line in reversed(stderr_tail):
        frame = _TRACEBACK_FRAME.match(line)
        if frame:
            message += f" (at {frame['file']}:{frame['line']})"
            break
    return message


def downsample(
    samples: Sequence[tuple[float, int]], limit: int = MAX_STORED_SAMPLES
) -> list[list[float]]:
    """At most ``limit`` samples, keeping each bucket's largest so spikes survive."""
    if len(samples) <= limit:
        return [list(sample) for sample in samples]
    bucket = len(samples) / limit
    kept: list[list[float]] = []
    for index in range(limit):
        chunk = samples[int(index * bucket) : int((index + 1) * bucket)] or [samples[-1]]
        seconds, rss = max(chunk, key=lambda sample: sample[1])
        kept.append([seconds, rss])
    return kept


def rss_event(result: CommandResult) -> RssMeasured:
    return RssMeasured(
        result.rss,
        result.status.to_dict(),
        result.wall_seconds,
        downsample(result.samples),
        result.leftover_processes,
    )


def git_revision(script: str) -> dict[str, Any] | None:
    """The git revision of the repository holding ``script``, with a dirty flag."""
    folder = os.path.dirname(os.path.abspath(script))
    try:
        head = subprocess.run(
            ["git", "-C", folder, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", folder, "status", "--porcelain", "--", os.path.abspath(script)],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": head.stdout.strip(), "script_modified": bool(dirty.stdout.strip())}


def workload_block(config: RunConfig) -> dict[str, Any]:
    return {
        "script": os.path.abspath(config.script),
        "args": list(config.args),
        "callable": config.callable_name,
        "python": config.python,
        "python_version": sys.version.split()[0],
        "torch_version": None,
        "git": git_revision(config.script),
    }


def empty_report(config: RunConfig) -> Report:
    """The report before anything is known: every figure missing, not zero."""
    return new_report(
        context={"device": config.device, "row_limit": config.row_limit},
        workload=workload_block(config),
        run={"rss_status": None, "profile_status": None, "complete": False},
    )


def _kept(trace_path: str) -> KeptTrace | None:
    """The trace the worker wrote where it was asked to, opened now it is done (the
    workload has ended: nothing of its can replace the file after this); None if it is
    no regular file there."""
    try:
        return KeptTrace.keep(trace_path, follow_links=False)
    except ExportError:
        return None


class Session:
    """Runs the RSS child and then the profile worker, reporting events as it goes."""

    def __init__(self, config: RunConfig, emit: EventCallback):
        self.config = config
        self._emit = emit
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._current: MeasuredCommand | None = None
        # torchrun's failure report alone is ~25 lines: keep what names the rank.
        self._stderr_tail = LineTail(STDERR_TAIL_LINES * (10 if config.nproc_per_node else 1))
        self.report = empty_report(config)
        self._private_dirs: list[PrivateDir] = []  # one a pass that needs one, newest last
        self._trace: KeptTrace | None = None  # the trace the worker wrote, held open
        # Files made for the peak pass's processes (run/handoff.py), by local rank (-1:
        # a plain pass's stop file).
        self._rss_files: dict[int, HandoffFile] = {}

    @property
    def _run(self) -> RunStatus:
        """The report's run block (the session made it, in :func:`empty_report`)."""
        run = self.report.get("run")
        assert run is not None
        return run

    @property
    def _workload(self) -> dict[str, Any]:
        workload = self.report.get("workload")
        assert workload is not None
        return workload

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            current = self._current
        if current is not None:
            current.cancel()

    @property
    def private_dir(self) -> str | None:
        """The newest directory this run owns (the worker's trace goes there); see
        :meth:`cleanup`."""
        return self._private_dirs[-1].path if self._private_dirs else None

    def _new_private_dir(self) -> str:
        """A directory of its own for the pass about to start (OSError if none can be
        made): a pass's processes can reach its folder, so no pass shares one with the
        pass before it, whose workload could have changed or deleted it."""
        made = PrivateDir()
        self._private_dirs.append(made)
        return made.path

    def cleanup(self) -> None:
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        for handoff in self._rss_files.values():
            handoff.close()
        for made in self._private_dirs:
            made.remove()
        self._private_dirs.clear()

    def _start(self, command: MeasuredCommand) -> MeasuredCommand | None:
        with self._lock:
            if self._cancelled.is_set():
                return None
            self._current = command.start()
            return command

    def _output(self, source: str) -> Callable[[str, str], None]:
        def emit(stream: str, text: str) -> None:
            if stream == "stderr":
                self._stderr_tail.add(text)
            self._emit(OutputLine(source, stream, text))

        return emit

    def _finish(
        self, outcome: Outcome, message: str, complete: bool, details: str = ""
    ) -> RunFinished:
        self._run["complete"] = complete
        self._emit(PhaseChanged(outcome))
        finished = RunFinished(outcome, message, self.report, complete, details, self._trace)
        self._emit(finished)
        return finished

    def _launcher_silent(self, before: str, failure: str) -> RunFinished:
        """A launcher that ended without reporting: cancelled before it set up its signal
        handlers (a cancel at any moment ends cleanly), else a failure saying so."""
        if self._cancelled.is_set():
            return self._finish("cancelled", f"cancelled before {before}", False)
        return self._finish("failed", failure, False)

    def run(self) -> RunFinished:
        """Run both children to the end (or to cancel). Never raises for workload failures."""
        script = self.config.script
        self._emit(PhaseChanged("measuring"))
        nproc = self.config.nproc_per_node
        env = None
        if nproc is not None or self.config.rss_steps is not None:
            try:  # the files the pass's processes write for us go here
                folder = self._new_private_dir()
                if nproc is not None:  # each rank's own peak (and step, with --rss-steps)
                    self._rss_files = {local: HandoffFile(folder, rss_name(local))
                                       for local in range(nproc)}  # fmt: skip
                else:  # the step the pass was ended at
                    self._rss_files = {-1: HandoffFile(folder, RSS_STOPPED)}
            except OSError as exc:
                return self._finish("failed", f"no private files for the run: {exc}", False)
            env = handoff_env(list(self._rss_files.values()), _worker_env())
        try:
            measured = self._start(
                MeasuredCommand(
                    self.config.rss_command(),
                    on_output=self._output("workload"),
                    on_sample=lambda seconds, rss: self._emit(RssSampled(seconds, rss)),
                    grace_seconds=self.config.grace_seconds,
                    env=env,
                )
            )
        except OSError as exc:
            return self._finish(
                "failed", f"{script}: could not start: {exc.strerror or exc}", False
            )
        if measured is None:
            return self._finish("cancelled", "cancelled before the workload started", False)
        try:
            result = measured.wait()
        except OSError as exc:
            return self._finish(
                "failed", f"{script}: could not start: {exc.strerror or exc}", False
            )
        except RuntimeError as exc:  # the launcher ended without a word
            return self._launcher_silent("the workload started", f"{script}: {exc}")
        measured_event = rss_event(result)
        if self.config.rss_steps is not None:  # what the peak covers, as it ended
            measured_event.status.update(self._rss_scope(self.config.rss_steps))
        self.report["totals"] = {
            **(self.report.get("totals") or {}),
            "process_peak_rss": result.rss,
        }
        self._run["rss_status"] = measured_event.status
        self._run["rss_wall_seconds"] = result.wall_seconds
        self._run["rss_samples"] = measured_event.samples
        self._emit(measured_event)
        if result.status.cancelled or self._cancelled.is_set():
            return self._finish("cancelled", "cancelled while measuring peak RSS", False)
        if not result.status.ok:
            message = failure_message(script, result.status.describe(), self._stderr_tail.lines)
            rank_failed = self._rank_failure()
            if rank_failed:
                message = f"{script}: {rank_failed} (the peak-RSS run, under torchrun)"
            return self._finish(
                "failed", message, False, details="\n".join(self._stderr_tail.lines)
            )
        return self._profile()

    def _rss_scope(self, limit: int) -> ExitStatus:
        """``rss_steps``: the pass was ended at step ``limit`` (every rank was, in a
        torchrun job); else ``rss_steps_unreached``: it ended before, so its peak is the
        whole run's. Read from the files its processes wrote when they stopped."""
        if -1 in self._rss_files:
            said = self._rss_files[-1].read_all(PEAK_BYTES).strip()
            stopped = [int(said) if said.isdigit() else None]
        else:
            stopped = [peak_and_step(f.read_all(PEAK_BYTES))[1] for f in self._rss_files.values()]
        if stopped and all(step == limit for step in stopped):
            return {"rss_steps": limit}
        return {"rss_steps_unreached": limit}

    def _profile(self) -> RunFinished:
        script = self.config.script
        self._emit(PhaseChanged("profiling"))
        if self.config.nproc_per_node is not None:
            try:
                folder = self._new_private_dir()
            except OSError as exc:
                return self._finish("failed", f"no private directory for the ranks: {exc}", False)
            return self._profile_ranks(folder)
        trace_path = self.config.trace_path
        trace_note = None
        if trace_path is None and self.config.private_trace:
            try:
                trace_path = os.path.join(self._new_private_dir(), "trace.json")
            except OSError as exc:  # TMPDIR full or read-only: the rows need no trace
                trace_note = diag.trace_unavailable(tempfile.gettempdir(), exc)
        channel_read, channel_write = os.pipe()
        try:
            worker = self._start(
                MeasuredCommand(
                    self.config.worker_command(channel_write, trace_path),
                    on_output=self._output("profiler"),
                    grace_seconds=self.config.grace_seconds,
                    pass_fds=[channel_write],
                    env=_worker_env(),
                )
            )
        except OSError as exc:
            os.close(channel_read)
            return self._finish("failed", f"could not start the profile worker: {exc}", False)
        finally:
            os.close(channel_write)
        if worker is None:
            os.close(channel_read)
            return self._finish("cancelled", "cancelled before profiling started", False)
        terminal = self._read_channel(channel_read)
        if trace_note is not None:
            self.report["diagnostics"].append(trace_note)
        try:
            result = worker.wait()
        except RuntimeError as exc:  # the launcher ended without a word
            return self._launcher_silent(
                "profiling started", f"{script}: the profile worker: {exc}"
            )
        self._run["profile_status"] = result.status.to_dict()
        self._run["profile_leftovers"] = result.leftover_processes
        if trace_path is not None and self.report.get("trace_path") == trace_path:
            self._trace = _kept(trace_path)
        ended = (
            f"; ended {result.leftover_processes} process(es) the workload left running"
            if result.leftover_processes
            else ""
        )
        rows = self.report["operators"]
        if result.status.cancelled or self._cancelled.is_set():
            return self._finish(
                "cancelled", f"cancelled while profiling ({len(rows)} rows kept{ended})", False
            )
        if terminal is None:
            return self._finish(
                "failed",
                f"{script}: no complete result from the profile worker "
                f"({result.status.describe()}; {len(rows)} rows received, marked incomplete)",
                False,
                details="\n".join(self._stderr_tail.lines),
            )
        if isinstance(terminal, ErrorMessage):
            # A load error names the script already ("x.py:3: syntax error: ...").
            named = terminal.kind == "load"
            return self._finish(
                "failed",
                terminal.message if named else f"{script}: {terminal.message}",
                False,
                details=terminal.traceback,
            )
        return self._finish("done", f"{len(rows)} rows from {script}{ended}", True)

    def _profile_ranks(self, folder: str) -> RunFinished:
        """Every rank profiled under torchrun: each rank's rows and steps passed on live as
        its worker writes them (tagged with its rank), then one multi-rank report once the
        job ends, whose cross-rank rows replace them. Each rank writes only into the
        channel file made for its local rank, read back through our own descriptor."""
        nproc = self.config.nproc_per_node or 0
        self._emit(ProfileMeta({"context": {"ranks": nproc, "ranks_streaming": True}}))
        try:
            channels = {local: HandoffFile(folder, channel_name(local)) for local in range(nproc)}
        except OSError as exc:
            return self._finish("failed", f"no channel files for the ranks: {exc}", False)
        tail = RankTail(channels)
        try:
            return self._follow_rank_job(tail, nproc)
        finally:
            tail.close()

    def _follow_rank_job(self, tail: RankTail, nproc: int) -> RunFinished:
        from torchscan_tui.formats.ranks import multi_rank_report

        script = self.config.script
        try:
            job = self._start(
                MeasuredCommand(
                    self.config.rank_worker_command(),
                    on_output=self._output("profiler"),
                    grace_seconds=self.config.grace_seconds,
                    env=handoff_env(list(tail.files.values()), _worker_env()),
                )
            )
        except OSError as exc:
            return self._finish("failed", f"could not start torchrun: {exc}", False)
        if job is None:
            return self._finish("cancelled", "cancelled before profiling started", False)
        job_over = threading.Event()
        streaming = threading.Thread(
            target=follow_ranks, args=(tail, nproc, job_over, self._emit), daemon=True
        )
        streaming.start()
        try:
            result = job.wait()
        except RuntimeError as exc:
            return self._launcher_silent("profiling started", f"{script}: torchrun: {exc}")
        finally:
            job_over.set()
            streaming.join()
        tail.poll()  # what the last look left (a line finished after it)
        self._run["profile_status"] = result.status.to_dict()
        self._run["profile_leftovers"] = result.leftover_processes
        if result.status.cancelled or self._cancelled.is_set():
            self._emit(ProfileMeta({"context": {"ranks": nproc}}))  # no longer streaming
            return self._finish("cancelled", "cancelled while profiling the ranks", False)
        reports, problems = read_ranks(tail.every_channel, nproc, self._rss_files)
        if reports:
            combined = multi_rank_report(reports)
            head = head_of(combined)
            head.pop("run", None)  # these three are this run's, as the session measured
            head.pop("workload", None)
            head.pop("totals", None)
            apply_head(self.report, head)
            self.report["operators"] = combined["operators"]
            self._run.update(combined.get("run") or {})
            self._emit(ProfileMeta(head_of(self.report)))
            self._emit(RowsReplaced(self.report["operators"]))
        else:
            self._emit(ProfileMeta({"context": {"ranks": nproc}}))
        if problems or not result.status.ok:
            said = "; ".join(self._rank_problems(problems)) or "the job failed"
            return self._finish(
                "failed",
                f"{script}: torchrun {result.status.describe()}: {said}",
                False,
                details="\n".join(self._stderr_tail.lines),
            )
        return self._finish("done", f"{nproc} ranks, {len(self.report['operators'])} rows "
                                    f"from {script}", True)  # fmt: skip

    def _rank_problems(self, problems: list[str]) -> list[str]:
        """What went wrong, the failed rank first as torchrun names it (its exit or
        signal, its last error): the others' missing results follow from it."""
        root = self._rank_failure()
        if root is None:
            return problems
        named = set(re.findall(r"rank \d+(?= failed)", root))  # ranks torchrun reported
        first = root.split(" failed", 1)[0]  # "rank 1": the cause
        return [root] + [
            problem.replace("ended without a complete result", f"stopped when {first} failed")
            for problem in problems
            if problem.split(":", 1)[0] not in named
        ]

    def _rank_failure(self) -> str | None:
        """Which rank failed, how, and its last error (from torchrun's report); None when
        the run is not under torchrun or torchrun named no rank."""
        if self.config.nproc_per_node is None:
            return None
        lines = list(self._stderr_tail.lines)
        return torchrun_failure(lines, lines)

    def _read_channel(self, channel_read: int) -> DoneMessage | ErrorMessage | None:
        """Apply channel messages to the report; return the terminal one, if any came."""
        terminal: DoneMessage | ErrorMessage | None = None
        try:
            for message in read_messages(channel_read):
                if isinstance(terminal, ErrorMessage) and terminal.kind == "channel":
                    continue  # read on to the end, so the worker never blocks writing
                match message:
                    case InvalidMessage(problem=problem):
                        terminal = _forged(problem, len(self.report["operators"]))
                    case PhaseMessage(phase=phase, step=step, steps=steps):
                        said: Phase = "receiving" if phase == "sending" else phase
                        self._emit(PhaseChanged(said, step, steps))
                    case HeadMessage():
                        apply_head(self.report, message.typed)
                        context = self.report["context"]
                        self._workload["torch_version"] = context.get("torch_version")
                        self._emit(ProfileMeta(head_of(self.report)))
                    case RowsMessage(rows=rows):
                        self.report["operators"].extend(rows)
                        self._emit(RowsReceived(rows))
                    case DoneMessage() | ErrorMessage():
                        terminal = message
        finally:
            os.close(channel_read)
        return terminal


def _forged(problem: str, rows: int) -> ErrorMessage:
    """The run's end when the channel carried a message that is not the worker's."""
    return ErrorMessage(
        "channel",
        f"the profile channel carried a message the worker did not send ({problem}); did "
        f"the workload write to its file descriptors? {rows} rows received before it are "
        "kept, marked incomplete",
    )


def _worker_env() -> dict[str, str]:
    """The worker must import this package even when it is not installed (a checkout)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding torchscan_tui
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = package_root + (os.pathsep + existing if existing else "")
    return env
