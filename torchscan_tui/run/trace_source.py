"""A big trace opened in the app: the app is up at once, the rows come as it is read.

Opened before the app starts (:class:`~torchscan_tui.run.sources.ReportSource`), a 300 MiB
trace kept the terminal on a progress line for ~8 s. Here the app starts first and this
source reads the trace on a thread of its own, saying how far it is (the header's phase),
hands over the rows of the part read so far after a second
(:mod:`~torchscan_tui.formats.early_rows`, marked as such), and then the whole trace's
report, whose rows take their place. A file that is no trace, or damaged, ends the run
failed with the same one-line message the command would have printed. No torch, no
textual.
"""

from __future__ import annotations

import os
import threading
import time

from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.formats.early_rows import FIRST_ROWS_AFTER_S, EarlyRows, ReadingStopped
from torchscan_tui.formats.jsonio import Progress
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report import ReportError, head_of
from torchscan_tui.formats.report_schema import Report
from torchscan_tui.run.events import PhaseChanged, ProfileMeta, RowsReplaced, RunFinished
from torchscan_tui.run.sources import Emit, opened_events, report_finished

PROGRESS_EVERY_S = 0.25  # the header's share read: a few updates a second, not per piece
STOP_CHECK_S = 0.05  # how soon a stop is seen while the reading thread works


class TraceSource:
    """A trace file read while the app runs (see the module). Not rerunnable."""

    rerunnable = False
    timed = False

    def __init__(self, path: str, early_after_s: float = FIRST_ROWS_AFTER_S):
        self.path = path
        self.title = os.path.basename(path)
        self.device = "?"  # the trace says, once read
        self.trace: KeptTrace | None = None
        self._early_after_s = early_after_s
        self._early: EarlyRows | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def ready_events(self) -> list:
        return [PhaseChanged("reading", share=0.0)]

    def run(self, emit: Emit) -> None:
        """Read the trace on a thread of its own and wait for it, or for a stop: a stop
        does not wait for a stage of grouping to end (seconds at 1M events). The reading
        thread, left, ends at its next stage or with the process (a daemon)."""
        said_at, said_stage = 0.0, "reading"

        def progress(stage: str, fraction: float) -> None:
            nonlocal said_at, said_stage
            now = time.monotonic()
            if stage != said_stage or now - said_at >= PROGRESS_EVERY_S:
                said_at, said_stage = now, stage
                emit(PhaseChanged("grouping" if stage == "grouping" else "reading",
                                  share=fraction))  # fmt: skip

        def hand_over(report: Report) -> None:
            if not self._stopped:
                emit(ProfileMeta(head_of(report)))
                emit(RowsReplaced(report["operators"]))

        early = EarlyRows(self.path, hand_over, self._early_after_s)
        with self._lock:
            if self._stopped:
                emit(self._stopped_end())
                return
            self._early = early
        read: list = []  # what the reading thread ends with: Opened, or what it raised
        reading = threading.Thread(
            target=self._read, args=(early, progress, read), name="trace reading", daemon=True
        )
        reading.start()
        while reading.is_alive() and not self._stopped:
            reading.join(STOP_CHECK_S)
        with self._lock:
            if self._stopped or not read:
                self._close_unshown(read)
                emit(self._stopped_end())
                return
            opened = read[0]
            if isinstance(opened, ReportError):
                emit(RunFinished("failed", str(opened), {}, False))
                return
            if isinstance(opened, BaseException):
                raise opened  # ours: the run's worker says it failed
            self.trace = opened.trace
        report = opened.report
        self.device = (report.get("context") or {}).get("device", "?")
        for event in opened_events(report):
            emit(event)
        emit(RowsReplaced(report["operators"]))
        emit(report_finished(report, trace=self.trace))

    def _read(self, early: EarlyRows, progress: Progress, read: list) -> None:
        """The reading thread: the trace opened (its file held open for ``t``) into
        ``read``; nothing when stopped, and then the file it held is closed."""
        from torchscan_tui.formats.opening import open_profile_paged

        try:
            with gc_paused():
                # On both cores, as the command reads: the second half read in a child,
                # the summaries made in one beside the grouping. A 1M-event trace's rows
                # all came 10-11 s after the start in line here, 6.4-7.4 s so. Its peak
                # with the children was 0.98-1.03x the file's size until the grouping's
                # own peak came down (the op-id map, the sort): 0.85-0.96x now, where
                # issue 31 asks <= 1x (docs/scale-history.md, the fourteenth stop).
                opened = open_profile_paged(self.path, progress, None, True, early)
        except ReadingStopped:
            return
        except BaseException as exc:  # noqa: BLE001 - handed to run(), which says it
            read.append(exc)
            return
        with self._lock:
            read.append(opened)
            if self._stopped:
                self._close_unshown(read)

    @staticmethod
    def _close_unshown(read: list) -> None:
        """The trace file an opening nobody will see holds: closed."""
        for opened in read:
            trace = getattr(opened, "trace", None)
            if trace is not None:
                trace.close()

    def _stopped_end(self) -> RunFinished:
        return RunFinished("cancelled", f"{self.path}: reading stopped", {}, False)

    def damaged_end(self, detail: str | None = None) -> RunFinished:
        # Never asked: rows come decoded, not as text.
        return RunFinished("failed", f"{self.path}: rows of the wrong type: {detail}", {}, False)

    def cancel(self) -> None:
        self._stop()

    def stop_peak(self) -> bool:
        return False  # no peak pass: a file

    def cleanup(self) -> None:
        self._stop()
        with self._lock:
            trace, self.trace = self.trace, None
        if trace is not None:
            trace.close()

    def _stop(self) -> None:
        with self._lock:
            self._stopped = True
            early = self._early
        if early is not None:
            early.stop()
