"""A big trace's first rows before all of it is read: the part read so far, grouped once.

A 1M-event trace (~300 MiB) takes ~5 s to read and group on two cores; a person looking
for the operators that cost the time need not wait for all of it to see what dominates.
Once reading has gone on for :data:`FIRST_ROWS_AFTER_S`, the events read so far are
grouped as a trace of their own (the rows alone: no kernel view, step model or summaries) and
handed over, marked as what they are: the rows of the first part of the file, whose
calls and times grow, and whose order may change, as the rest is read; the whole
trace's report then takes their place. The part's figures are true of the part: its
events are grouped as any trace's are; only an operator still open where the part ends
lacks the children that start after it (as in a trace cut short there). Kineto writes a
trace's CPU operators first and its runtime calls and kernels after them (the first
~37% of the test traces are operators alone), so a part usually holds no device work
yet: its device time is missing (None), its note says it comes with the rest, and of the
part's own notes only those that tell of the whole are kept (never "no GPU kernels").

The cost is grouping that part once more (a fifth of a 1M-event trace: ~0.4 s). A
reading already past :data:`LATE_SHARE` of the file when the time comes hands nothing
over: the whole is soon there. Also here: :meth:`EarlyRows.stop`, a reading nobody waits
for any more (the app was left) ends at its next read or stage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.formats.jsonio import Progress
from torchscan_tui.formats.report import ReportError, incomplete_run
from torchscan_tui.formats.report_schema import Report

if TYPE_CHECKING:  # the trace machinery is imported when a trace is read
    from torchscan_tui.formats.trace.columns import ColumnReader

# Of reading, before the part read is grouped and shown. Once the stream read faster
# (docs/scale-history.md, the eighth stop), 1 s read a third of a 1M-event trace (alone),
# and grouping it put the app's first rows at ~2.5 s; 0.5 s reads a fifth: they show at
# ~1.4 s, and the whole comes sooner too (the part grouped first is smaller): 6.8-7.1 ->
# 5.7-6.2 s.
FIRST_ROWS_AFTER_S = 0.5
LATE_SHARE = 0.6  # of the file read by then: the whole comes soon, nothing is handed over

HandOver = Callable[[Report], None]
PART_TELLS_OF_WHOLE = frozenset({"no_shapes_recorded"})  # its first events' Input Dims


class ReadingStopped(Exception):
    """The reading was stopped (:meth:`EarlyRows.stop`): nobody waits for its report."""


class EarlyRows:
    """Watches a trace being read into columns (:meth:`consume` wraps the reader's
    ``add``, :meth:`listen` the progress) and hands the part read over once, as a report
    (see the module)."""

    def __init__(
        self,
        source: str,
        hand_over: HandOver,
        after_s: float = FIRST_ROWS_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.source = source
        self.hand_over = hand_over
        self.after_s = after_s
        self.clock = clock
        self.read_share = 0.0  # of the file, read into the part handed over
        self.handed_over = False
        self._share = 1.0  # of the file, the reading heard spans (see consume)
        self._stopped = threading.Event()

    def stop(self) -> None:
        """From any thread: end the reading at its next read or stage (ReadingStopped)."""
        self._stopped.set()

    def listen(self, progress: Progress) -> Progress:
        """``progress``, hearing on the way how much of the file is read; once stopped,
        the next stage said ends the open (ReadingStopped) while it groups, too."""

        def heard(stage: str, fraction: float) -> None:
            if self._stopped.is_set():
                raise ReadingStopped(self.source)
            if stage == "reading":
                self.read_share = fraction * self._share
            progress(stage, fraction)

        return heard

    def consume(self, reader: ColumnReader, share: float = 1.0) -> Callable[[list], None]:
        """The reader's ``add``, handing the part read over when it is time. (A stop is
        heard by :meth:`listen`: the reading says how far it is at every chunk read.)
        ``share``: the reading covers the file's first ``share`` (its first half, read
        here while a child reads the rest: formats/trace/halves.py), so the share said
        of the part is of the file, not of that half."""
        due = self.clock() + self.after_s
        self._share = share

        def add(batch: list) -> None:
            reader.add(batch)
            if self.handed_over or self.clock() < due:
                return
            self.handed_over = True  # once, whatever comes of it
            if self.read_share < LATE_SHARE:
                report = early_report(reader, self.source, self.read_share)
                if report is not None:
                    self.hand_over(report)

        return add


def early_report(reader: ColumnReader, source: str, read_share: float) -> Report | None:
    """The report of the events ``reader`` has read so far, marked incomplete and noted
    (see the module); None when they hold no event a report is made of yet."""
    from torchscan_tui.formats.trace.decode import DecodedTrace
    from torchscan_tui.formats.trace.reader import report_from_columns

    read = reader.snapshot()
    try:
        report = report_from_columns(read, DecodedTrace([], None, None, None), source,
                                     summarise=False)  # fmt: skip
    except (ReportError, ValueError, TypeError, ArithmeticError):
        return None  # a part that cannot be grouped: the whole trace's reading says why
    context = report["context"]
    device_events = context.get("device_events") or 0
    note = diag.early_rows(source, read_share, read.columns.event_count, device_events)
    # Of the part's notes only what the part can tell of the whole: Kineto writes a
    # trace's operators first and its kernels after them, so "no GPU kernels" (and what
    # is said of the device work) would be said of a CUDA trace's first part.
    kept = [n for n in report["diagnostics"] if n["code"] in PART_TELLS_OF_WHOLE]
    report["diagnostics"] = [note, *kept]
    if not device_events:
        context.pop("device", None)  # not known yet: the app says its source's "?"
    # The views over a report (kernels here; the summaries are not made) wait for the
    # whole: opened on the part, they would show its figures unmarked, and stay so.
    report["kernels"] = []
    report["run"] = incomplete_run(report.get("run"), note["message"])
    return report
