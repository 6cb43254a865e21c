"""What the UI knows about the current run, updated from run events (pure).

The profile screen feeds every :mod:`torchscan_tui.run.events` event but rows to
:meth:`RunState.apply` (rows go straight to the row view, never held here) and renders
widgets from this state, so the rules (what a phase means, how much log is kept, what
"incomplete" is) are tested without Textual.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from torchscan_tui.common.line_tail import LineTail
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.run.events import (
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RssMeasured,
    RssSampled,
    RunFinished,
)
from torchscan_tui.run.phases import RUN_PHASES

RUNNING_PHASES = frozenset(
    {"starting", "measuring", "profiling", "aggregating", "receiving", "tracing"}
)
PHASE_LABELS = {
    "starting": "starting",
    **RUN_PHASES,  # "run 1 of 2, the whole script for peak RSS", ...
    "receiving": "receiving rows",
    "tracing": "writing the trace",
    "done": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "opened": "opened from a file",
}
LOG_LINE_LIMIT = 5000
RUN_MARKERS = {
    "measuring": "── run 1: the whole script, for peak RSS ──",
    "profiling": "── run 2: the profile worker (torch.profiler) ──",
}


@dataclass
class RunState:
    """The run as the UI shows it. Every missing figure is None, not zero."""

    phase: str = "starting"
    started_at: float | None = None
    ended_at: float | None = None
    rss: dict | None = None
    rss_status: dict | None = None
    rss_wall_seconds: float | None = None
    rss_leftovers: int = 0
    samples: list = field(default_factory=list)
    context: dict = field(default_factory=dict)
    diagnostics: list = field(default_factory=list)
    totals: dict = field(default_factory=dict)
    trace_path: str | None = None  # where the run's trace is, as said: shown, never copied
    trace: KeptTrace | None = None  # the trace this process wrote or opened: ``t`` copies it
    kernels: list = field(default_factory=list)
    overview: dict | None = None
    outcome: str | None = None
    message: str = ""
    details: str = ""
    complete: bool = False
    report: dict | None = None
    log: LineTail = field(default_factory=lambda: LineTail(LOG_LINE_LIMIT))
    pending_log: list = field(default_factory=list)
    markers_logged: set = field(default_factory=set)
    step: tuple[int, int | None] | None = None  # (steps done, of how many) while profiling

    def phase_label(self) -> str:
        """What the header says of the phase: ``run 2 of 2, the profile: step 3 of 6``."""
        label = PHASE_LABELS.get(self.phase, self.phase)
        if self.step is not None and self.phase == "profiling":
            done, of = self.step
            label += f": step {done} of {of}" if of else f": step {done}"
        return label

    @property
    def running(self) -> bool:
        return self.phase in RUNNING_PHASES or self.phase == "loading"

    def elapsed(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.monotonic())
        return end - self.started_at

    def start(self, now: float | None = None) -> None:
        """Forget the previous run (the log too) and start timing a new one."""
        self.__init__()  # type: ignore[misc]
        self.started_at = now if now is not None else time.monotonic()

    def apply(self, event: object) -> None:
        if isinstance(event, PhaseChanged):
            self.phase = event.phase
            self.step = (event.step, event.steps) if event.step is not None else None
            marker = RUN_MARKERS.get(event.phase)
            if marker and marker not in self.markers_logged:
                # The workload runs twice: say once which run the lines below come from.
                self.markers_logged.add(marker)
                self._log_line(marker)
        elif isinstance(event, OutputLine):
            prefix = "! " if event.stream == "stderr" else "  "
            self._log_line(prefix + event.text)
        elif isinstance(event, RssSampled):
            self.samples.append([event.seconds, event.rss_bytes])
        elif isinstance(event, RssMeasured):
            self.rss = event.rss
            self.rss_status = event.status
            self.rss_wall_seconds = event.wall_seconds
            self.rss_leftovers = event.leftover_processes
            if event.samples:
                self.samples = [list(sample) for sample in event.samples]
        elif isinstance(event, ProfileMeta):
            self.context = event.context
            self.diagnostics = event.diagnostics
            self.totals = event.totals
            self.trace_path = event.trace_path
            self.kernels = event.kernels
            self.overview = event.overview
        elif isinstance(event, RunFinished):
            self.outcome = event.outcome
            self.phase = event.outcome
            self.message = event.message
            self.details = event.details
            self.complete = event.complete
            self.report = event.report or self.report
            self.trace_path = event.report.get("trace_path") or self.trace_path
            self.trace = event.trace
            self.ended_at = time.monotonic()

    def _log_line(self, line: str) -> None:
        self.log.add(line)
        self.pending_log.append(line)

    def take_pending_log(self) -> list:
        lines, self.pending_log = self.pending_log[-self.log.limit :], []
        return lines
