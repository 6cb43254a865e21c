"""What the UI knows about the current run, updated from run events (pure).

The profile screen feeds every :mod:`torchscan_tui.run.events` event but rows to
:meth:`RunState.apply` (rows go straight to the row view, never held here) and renders
widgets from this state, so the rules (what a phase means, how much log is kept, what
"incomplete" is) are tested without Textual.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from torchscan_tui.analysis.records import KernelRow, MemoryBlock, ModulesBlock, Note, Overview
from torchscan_tui.common.line_tail import LineTail
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report_schema import (
    Context,
    ExitStatus,
    Head,
    PeakRss,
    Report,
    Totals,
)
from torchscan_tui.run.events import (
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RssMeasured,
    RssSampled,
    RunFinished,
)
from torchscan_tui.run.phases import OPENING, PHASE_WORDS, RUNNING, Outcome, Phase

LOG_LINE_LIMIT = 5000
RUN_MARKERS = {
    "profiling": "── run 1: the profile worker (torch.profiler) ──",
    "measuring": "── run 2: the whole script, unprofiled, for peak RSS ──",
}


@dataclass
class RunState:
    """The run as the UI shows it. Every missing figure is None, not zero."""

    phase: Phase = "starting"
    started_at: float | None = None
    ended_at: float | None = None
    rss: PeakRss | None = None
    rss_status: ExitStatus | None = None
    rss_wall_seconds: float | None = None
    rss_leftovers: int = 0
    samples: list[list[float]] = field(default_factory=list)
    head: Head = field(default_factory=Head)  # the report but its rows, as last said
    trace: KeptTrace | None = None  # the trace this process wrote or opened: ``t`` copies it
    outcome: Outcome | None = None
    message: str = ""
    details: str = ""
    complete: bool = False
    report: Report | None = None
    log: LineTail = field(default_factory=lambda: LineTail(LOG_LINE_LIMIT))
    pending_log: list = field(default_factory=list)
    markers_logged: set = field(default_factory=set)
    step: tuple[int, int | None] | None = None  # (steps done, of how many) while profiling
    share: float | None = None  # of a trace read or grouped, while it is

    # The head's blocks, each missing one as its empty value (the head travels whole:
    # run/protocol.py).
    @property
    def context(self) -> Context:
        return self.head.get("context") or {}

    @property
    def diagnostics(self) -> list[Note]:
        return self.head.get("diagnostics") or []

    @property
    def totals(self) -> Totals:
        return self.head.get("totals") or {}

    @property
    def kernels(self) -> list[KernelRow]:
        return self.head.get("kernels") or []

    @property
    def overview(self) -> Overview | None:
        return self.head.get("overview")

    @property
    def memory(self) -> MemoryBlock | None:
        return self.head.get("memory")

    @property
    def modules(self) -> ModulesBlock | None:
        return self.head.get("modules")

    @property
    def trace_path(self) -> str | None:
        """Where the run's trace is, as said: shown, never copied (see :attr:`trace`)."""
        return self.head.get("trace_path")

    def phase_label(self) -> str:
        """What the header says of the phase: ``run 2 of 2, the profile: step 3 of 6``."""
        label = PHASE_WORDS.get(self.phase, self.phase)
        if self.step is not None and self.phase == "profiling":
            done, of = self.step
            label += f": step {done} of {of}" if of else f": step {done}"
        elif self.share is not None:
            label += f": {self.share:.0%}"
        return label

    @property
    def running(self) -> bool:
        return self.phase in RUNNING

    @property
    def opening(self) -> bool:
        """A file read in the app: no workload, and the rows shown, if any, a part's."""
        return self.phase in OPENING

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
            self.share = event.share
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
            self.head = event.head
        elif isinstance(event, RunFinished):
            self.outcome = event.outcome
            self.phase = event.outcome
            self.message = event.message
            self.details = event.details
            self.complete = event.complete
            self.report = event.report or self.report
            trace_path = event.report.get("trace_path")
            if trace_path:
                self.head = {**self.head, "trace_path": trace_path}
            self.trace = event.trace
            self.ended_at = time.monotonic()
            if event.outcome == "failed":
                self._log_traceback(event.details)

    def _log_traceback(self, details: str) -> None:
        """A failure's traceback in the log pane, unless the workload printed it there
        already (a worker that caught the exception sends it on its channel instead)."""
        said = details.strip().splitlines()
        if said and "! " + said[-1] not in self.log.lines:
            for line in said:
                self._log_line("! " + line)

    def _log_line(self, line: str) -> None:
        self.log.add(line)
        self.pending_log.append(line)

    def take_pending_log(self) -> list:
        lines, self.pending_log = self.pending_log[-self.log.limit :], []
        return lines
