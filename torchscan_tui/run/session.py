"""One run of a workload: the profile worker, then the peak-RSS child (no torch, no
textual).

:class:`Session` drives both child processes and reports everything that happens as typed
events to one callback, from worker threads; the UI turns them into Textual messages and
the headless CLI into a report. The profile comes first, so rows come within seconds of
a window's first steps; the peak pass then runs the script whole and unprofiled (its step
times are the clean ones), and ``stop_peak_pass()`` ends it early without failing the run.
``cancel()`` and ``stop_peak_pass()`` may be called from any thread.
"""

from __future__ import annotations

import os
import re
import secrets
import statistics
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
    REMOTE_PEAKS_BYTES,
    nodes_notes,
    peak_and_step,
    rank_peak,
    read_ranks,
    remote_peaks,
    spans_nodes,
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
from torchscan_tui.run.failure import where_it_raised
from torchscan_tui.run.handoff import HandoffFile, handoff_env
from torchscan_tui.run.peak_steps import PeakSteps, read_peak_steps
from torchscan_tui.run.phases import Outcome, Phase
from torchscan_tui.run.private_dir import PrivateDir
from torchscan_tui.run.probe_lines import ProbeLines
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
from torchscan_tui.run.rank_files import (
    NODE_VARIABLE,
    PEAK_STEPS,
    REMOTE_CHANNEL,
    REMOTE_PEAKS,
    channel_name,
    rss_name,
)
from torchscan_tui.run.rank_tail import RankTail, follow_ranks

MAX_STORED_SAMPLES = 240
PEAK_STEPS_BYTES = 8 * 2**20  # the peak pass's step lines read back: ~400k steps
STDERR_TAIL_LINES = 20  # the workload's last stderr lines, for a failure's message


def _channel_error(said: str | None) -> str:
    """``": RuntimeError: ..."``: what a failed rank's channel said, when it said why."""
    if not said or said.startswith("ended without") or "carried a message" in said:
        return ""
    return f": {said.splitlines()[0][:300]}"


def failure_message(script: str, how: str, stderr_tail: Sequence[str]) -> str:
    """One line for a failed workload: how it ended, its last stderr line, and where.

    For an exception or a syntax error the traceback's innermost frame in the user's own
    code says where; it is appended as ``(at FILE:LINE in FUNCTION)``.
    """
    message = f"{script}: the workload {how}"
    lines = [line.strip() for line in stderr_tail if line.strip()]
    if lines:
        message += f": {lines[-1]}"
    where = where_it_raised(stderr_tail)
    if where:
        message += f" (at {where})"
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
    """Runs the profile worker and then the peak-RSS child, reporting events as it goes."""

    def __init__(self, config: RunConfig, emit: EventCallback):
        self.config = config
        self._emit = emit
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._current: MeasuredCommand | None = None
        # torchrun's failure report alone is ~25 lines: keep what names the rank.
        self._stderr_tail = LineTail(STDERR_TAIL_LINES * (10 if config.nproc_per_node else 1))
        self.report = empty_report(config)
        self._probes = ProbeLines()  # Kineto's own probe lines, said once
        self._private_dirs: list[PrivateDir] = []  # one a pass that needs one, newest last
        self._trace: KeptTrace | None = None  # the trace the worker wrote, held open
        # Files made for the peak pass's processes (run/handoff.py), by local rank (-1:
        # a plain pass's steps).
        self._rss_files: dict[int, HandoffFile] = {}
        self._peak_running = threading.Event()  # the peak pass runs: a stop ends only it
        self._peak_stopped_by: str | None = None  # who ended it early ("you", "--timeout")
        self._rank_places: dict[int, int] = {}  # a torchrun job: each rank's local rank
        # A job across nodes: each other node's rank's (node, local rank), and the peaks
        # collected for them (worker/node_reports.py); this node's name in both passes.
        self._remote_places: dict[int, tuple[str, int]] = {}
        self._remote_peaks: HandoffFile | None = None
        self._node = secrets.token_hex(6)

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
        if self._remote_peaks is not None:
            self._remote_peaks.close()
            self._remote_peaks = None
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
                kept = self._probes.keep(text)
                if kept is None:
                    return
                if kept == text:  # a probe line is no failure's last word
                    self._stderr_tail.add(text)
                text = kept
            self._emit(OutputLine(source, stream, text))

        return emit

    def _finish(
        self, outcome: Outcome, message: str, complete: bool, details: str = ""
    ) -> RunFinished:
        self._run["complete"] = complete
        folded = self._probes.summary()
        if folded:
            self._emit(OutputLine("profiler", "stderr", folded))
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
        """The profile first (rows within seconds of the first steps of a window), then
        the peak-RSS pass, which :meth:`stop_peak_pass` may end early: its peak is then
        the kernel's figure for what ran, and the report says how far that was. Never
        raises for workload failures."""
        profiled = self._profile()
        if isinstance(profiled, RunFinished):  # failed or cancelled: no peak pass after it
            return profiled
        return self._measure(profiled)

    @property
    def measuring_peak(self) -> bool:
        """Whether the peak pass runs now (the rows are in): a stop ends only it."""
        return self._peak_running.is_set()

    def stop_peak_pass(self, by: str) -> bool:
        """End the peak pass here (``by``: who asked: "you", "--timeout"); the run ends
        done, its peak the kernel's figure up to now. False when no peak pass runs (a
        stop during the profile is a cancel: the caller decides)."""
        with self._lock:
            if not self._peak_running.is_set():
                return False
            self._peak_stopped_by = by
            current = self._current
        if current is not None:
            current.cancel()
        return True

    def _measure(self, done_message: str) -> RunFinished:
        """The peak-RSS pass: the script as ``python SCRIPT`` runs it, to its end (or to
        ``--rss-steps``, or a stop), for the kernel's high-water mark."""
        script = self.config.script
        self._emit(PhaseChanged("measuring"))
        nproc = self.config.nproc_per_node
        try:  # the files the pass's processes write for us go here
            folder = self._new_private_dir()
            if nproc is not None:  # each rank's own peak (and step, with --rss-steps)
                self._rss_files = {local: HandoffFile(folder, rss_name(local))
                                   for local in range(nproc)}  # fmt: skip
            else:  # the steps it took (worker/peak_pass.py)
                self._rss_files = {-1: HandoffFile(folder, PEAK_STEPS)}
        except OSError as exc:
            return self._finish("failed", f"no private files for the peak pass: {exc}", True)
        if nproc is not None and spans_nodes(self.config.torchrun_options):
            try:
                self._remote_peaks = HandoffFile(folder, REMOTE_PEAKS)
            except OSError as exc:
                return self._finish("failed", f"no private files for the peak pass: {exc}", True)
        remote = [self._remote_peaks] if self._remote_peaks is not None else []
        env = handoff_env([*self._rss_files.values(), *remote], self._node_env())
        try:
            with self._lock:
                self._peak_running.set()
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
                "failed", f"{script}: the peak-RSS run could not start: {exc.strerror or exc}",
                True,
            )  # fmt: skip
        if measured is None:
            return self._finish("cancelled", "cancelled before the peak-RSS run", True)
        try:
            result = measured.wait()
        except OSError as exc:
            return self._finish(
                "failed", f"{script}: the peak-RSS run could not start: {exc.strerror or exc}",
                True,
            )  # fmt: skip
        except RuntimeError as exc:  # the launcher ended without a word
            return self._launcher_silent("the peak-RSS run started", f"{script}: {exc}")
        finally:
            self._peak_running.clear()
        stopped_by = self._peak_stopped_by
        measured_event = rss_event(result)
        measured_event.status.update(self._peak_scope(stopped_by))
        self.report["totals"] = {
            **(self.report.get("totals") or {}),
            "process_peak_rss": result.rss,
        }
        self._run["rss_status"] = measured_event.status
        self._run["rss_wall_seconds"] = result.wall_seconds
        self._run["rss_samples"] = measured_event.samples
        self._record_unprofiled_steps()
        self._fill_rank_peaks()
        self._emit(measured_event)
        if stopped_by is not None:
            return self._finish("done", f"{done_message}; peak RSS up to the stop", True)
        if result.status.cancelled or self._cancelled.is_set():
            return self._finish("cancelled", "cancelled while measuring peak RSS", True)
        if not result.status.ok:
            message = failure_message(script, result.status.describe(), self._stderr_tail.lines)
            rank_failed = self._rank_failure()
            if rank_failed:
                message = f"{script}: {rank_failed} (the peak-RSS run, under torchrun)"
            message += " (the peak-RSS run, after the profile: its rows are kept)"
            return self._finish("failed", message, True, details="\n".join(self._stderr_tail.lines))
        return self._finish("done", done_message, True)

    def _peak_scope(self, stopped_by: str | None) -> ExitStatus:
        """What the peak covers: the steps the pass took, and ``stopped_by`` when it was
        ended early, or ``rss_steps`` / ``rss_steps_unreached`` (``--rss-steps``)."""
        scope: ExitStatus = {}
        steps = self._peak_steps()
        if steps is not None:
            scope["steps"] = steps.steps
        if stopped_by is not None:
            scope["stopped_by"] = stopped_by
            scope["cancelled"] = False  # stopped, not a cancelled run
        elif self.config.rss_steps is not None:
            scope.update(self._rss_scope(self.config.rss_steps))
        return scope

    def _peak_steps(self) -> PeakSteps | None:
        """A plain pass's steps (None in a torchrun job: each rank says only its peak)."""
        steps_file = self._rss_files.get(-1)
        if steps_file is None:
            return None
        return read_peak_steps(steps_file.read_all(PEAK_STEPS_BYTES).decode("ascii", "replace"))

    def _record_unprofiled_steps(self) -> None:
        """The peak pass's step times: the script's steps without the profiler."""
        steps = self._peak_steps()
        if steps is None or not steps.step_seconds:
            return
        seconds = steps.step_seconds
        self._run["unprofiled_steps"] = {
            "steps": steps.steps,
            "median_seconds": statistics.median(seconds),
            "min_seconds": min(seconds),
            "max_seconds": max(seconds),
            "startup_seconds": steps.startup_seconds,
            "torch_import_seconds": steps.torch_import_seconds,
        }

    def _node_env(self) -> dict[str, str]:
        """The ranks' environment: this node named as in both passes (a job across nodes
        pairs each rank's peak with its rows by node and local rank)."""
        return {**_worker_env(), NODE_VARIABLE: self._node}

    def _fill_rank_peaks(self) -> None:
        """A torchrun job's ranks: each rank's own peak, from the file its local rank
        wrote in the peak pass, into its summary (the profile pass came first)."""
        ranks = self.report.get("ranks")
        if not ranks or not self._rank_places:
            return
        remote = remote_peaks(self._remote_peaks.read_all(REMOTE_PEAKS_BYTES)
                              if self._remote_peaks is not None else b"")  # fmt: skip
        for summary in ranks.get("per_rank") or []:
            local = self._rank_places.get(summary["rank"])
            place = self._remote_places.get(summary["rank"])
            summary["peak_rss"] = (
                rank_peak(self._rss_files.get(local)) if local is not None
                else remote.get(place) if place is not None
                else None
            )  # fmt: skip
        self._emit(ProfileMeta(head_of(self.report)))

    def _rss_scope(self, limit: int) -> ExitStatus:
        """``rss_steps``: the pass was ended at step ``limit`` (every rank was, in a
        torchrun job); else ``rss_steps_unreached``: it ended before, so its peak is the
        whole run's. Read from the files its processes wrote when they stopped."""
        if -1 in self._rss_files:
            said = self._peak_steps()
            stopped = [said.stopped_at if said is not None else None]
        else:
            stopped = [peak_and_step(f.read_all(PEAK_BYTES))[1] for f in self._rss_files.values()]
        if stopped and all(step == limit for step in stopped):
            return {"rss_steps": limit}
        return {"rss_steps_unreached": limit}

    def _profile(self) -> RunFinished | str:
        """The profile pass: its rows and head, as they come. Returns what to say once
        the run is done (the peak pass comes next), or the run's end if it ended here."""
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
            message = terminal.message if named else f"{script}: {terminal.message}"
            where = where_it_raised(terminal.traceback.splitlines())
            if where and terminal.kind == "workload":
                message += f" (at {where})"
            return self._finish("failed", message, False, details=terminal.traceback)
        return f"{len(rows)} rows from {script}{ended}"

    def _profile_ranks(self, folder: str) -> RunFinished | str:
        """Every rank profiled under torchrun: each rank's rows and steps passed on live as
        its worker writes them (tagged with its rank), then one multi-rank report once the
        job ends, whose cross-rank rows replace them. Each rank writes only into the
        channel file made for its local rank, read back through our own descriptor."""
        nproc = self.config.nproc_per_node or 0
        self._emit(ProfileMeta({"context": {"ranks": nproc, "ranks_streaming": True}}))
        try:
            channels = {local: HandoffFile(folder, channel_name(local)) for local in range(nproc)}
            # Across nodes, the other nodes' ranks come to rank 0's node over the job's
            # store (worker/node_reports.py): a file for them, whichever node that is.
            remote = (
                HandoffFile(folder, REMOTE_CHANNEL)
                if spans_nodes(self.config.torchrun_options)
                else None
            )
        except OSError as exc:
            return self._finish("failed", f"no channel files for the ranks: {exc}", False)
        tail = RankTail(channels, remote)
        try:
            return self._follow_rank_job(tail, nproc)
        finally:
            tail.close()

    def _follow_rank_job(self, tail: RankTail, nproc: int) -> RunFinished | str:
        from torchscan_tui.formats.ranks import multi_rank_report

        script = self.config.script
        try:
            job = self._start(
                MeasuredCommand(
                    self.config.rank_worker_command(),
                    on_output=self._output("profiler"),
                    grace_seconds=self.config.grace_seconds,
                    env=handoff_env(
                        [*tail.files.values(), *([tail.remote] if tail.remote else [])],
                        self._node_env(),
                    ),  # fmt: skip
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
        # Each rank's peak comes from the peak pass, after: its local rank says whose.
        self._rank_places = {channel.rank: channel.local_rank for channel in tail.local_channels
                             if channel.rank is not None}  # fmt: skip
        self._remote_places = {channel.rank: (channel.node, channel.local_rank)
                               for channel in tail.remote_channels
                               if channel.rank is not None}  # fmt: skip
        reports, problems = read_ranks(tail.every_channel, nproc, {})
        if reports:
            combined = multi_rank_report(reports)
            # First: on a node other than rank 0's, where the whole job's view is is what
            # its warning line should say (it showed the rows' note, this one behind it).
            combined["diagnostics"][:0] = nodes_notes(
                self.config.torchrun_options, tail.local_channels, tail.remote_channels
            )
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
        return f"{nproc} ranks, {len(self.report['operators'])} rows from {script}"

    def _rank_problems(self, problems: list[str]) -> list[str]:
        """What went wrong, the failed rank first as torchrun names it (its exit or
        signal, its last error): the others' missing results follow from it."""
        root = self._rank_failure()
        if root is None:
            return problems
        named = set(re.findall(r"rank \d+(?= failed)", root))  # ranks torchrun reported
        first = root.split(" failed", 1)[0]  # "rank 1": the cause
        said = dict(problem.split(": ", 1) for problem in problems if ": " in problem)
        # A rank whose worker caught the exception printed none: its channel said it.
        root = re.sub(
            r"(rank \d+) failed \(exit status \d+\)(?=;|$)",
            lambda found: found.group(0) + _channel_error(said.get(found.group(1))),
            root,
        )
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
