"""What a run says as it goes: the typed events a source hands the UI and the headless CLI.

Immutable and plain: NamedTuples, as a frozen dataclass costs ~1.3 ms to define and eight
of them were ~10 ms of the app's start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from torchscan_tui.run.phases import Outcome, Phase

if TYPE_CHECKING:
    from torchscan_tui.formats.kept_trace import KeptTrace
    from torchscan_tui.formats.report_pages import PendingRows
    from torchscan_tui.formats.report_schema import ExitStatus, Head, PeakRss, Report


class PhaseChanged(NamedTuple):
    phase: Phase
    step: int | None = None  # in a step window: steps done, warm-up included
    steps: int | None = None  # of this many (0: not known in advance)
    share: float | None = None  # reading or grouping a trace: how much of it is done


class OutputLine(NamedTuple):
    source: str  # "workload" (the RSS run) or "profiler" (the worker run)
    stream: str  # "stdout" or "stderr"
    text: str


class RssSampled(NamedTuple):
    seconds: float
    rss_bytes: int


class RssMeasured(NamedTuple):
    """The kernel's figure for the RSS run, with how it ended (plain data, JSON-ready)."""

    rss: PeakRss
    status: ExitStatus
    wall_seconds: float | None  # None: a report that did not keep it
    samples: list[list[float]]  # [seconds, rss_bytes] pairs, sampled from /proc: approximate
    leftover_processes: int = 0


class ProfileMeta(NamedTuple):
    """The report's head (every block but its rows, one typed object): what the worker
    said of its profile, or what a reopened file holds."""

    head: Head


class RowsReceived(NamedTuple):
    rows: list


class RowsReplaced(NamedTuple):
    """These rows take the place of every row received so far: a torchrun job's
    cross-rank rows, once every rank is done, replace the ranks' own rows streamed live
    (each tagged with its ``rank``)."""

    rows: list


class RowTextsReceived(NamedTuple):
    """Rows still as JSON text (a reopened report's, after its first page).

    The app decodes them on its own thread, a part per moment: a thread that decodes them
    holds the interpreter lock through each decode and slowed the app's frames to 200 ms.
    """

    texts: PendingRows


class RunFinished(NamedTuple):
    outcome: Outcome
    message: str
    report: Report
    complete: bool  # False when rows are missing or partial
    details: str = ""  # a traceback or the workload's last stderr lines
    # The Chrome trace this process wrote or opened for the run, held open: the only one
    # ``t`` exports (a report's ``trace_path`` is a hint, never copied: see kept_trace).
    trace: KeptTrace | None = None


Event = (
    PhaseChanged
    | OutputLine
    | RssSampled
    | RssMeasured
    | ProfileMeta
    | RowsReceived
    | RowsReplaced
    | RowTextsReceived
    | RunFinished
)
EventCallback = Callable[[Event], None]
