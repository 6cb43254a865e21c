"""Where a run's events come from (no torch, no textual).

The profile screen is handed a source and never knows which: a live :class:`LiveSource`
(the RSS child and the profile worker) or a :class:`ReportSource` (a saved report,
reopened without torch); the tests hand it recorded events (tests/replay.py). ``run``
blocks and is called from a worker thread; ``emit`` is thread-safe on the app's side.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from torchscan_tui.common.memory import map_large_blocks
from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report import head_of, incomplete_run
from torchscan_tui.formats.report_head import RowsUnreadable
from torchscan_tui.formats.report_pages import PendingRows
from torchscan_tui.formats.report_schema import TRACE_SOURCE, Report, RunStatus
from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.events import (
    Event,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RowTextsReceived,
    RssMeasured,
    RunFinished,
)
from torchscan_tui.run.protocol import ROW_BATCH

if TYPE_CHECKING:
    from torchscan_tui.run.session import Session

Emit = Callable[[Event], None]


class RunSource(Protocol):
    title: str
    device: str
    rerunnable: bool
    timed: bool  # whether elapsed time means anything (not for a reopened report)

    def ready_events(self) -> list[Event]:
        """Events known before anything runs: the app applies them before its first frame,
        then calls :meth:`run` (on a thread) for the rest."""
        ...

    def run(self, emit: Emit) -> None: ...

    def damaged_end(self, detail: str | None = None) -> RunFinished:
        """The end of a run whose rows sent as text hold one of the wrong type
        (``detail`` says which): the rows before it are kept."""
        ...

    def cancel(self) -> None: ...

    def stop_peak(self) -> bool:
        """End the peak-RSS pass here, the run done (the rows are in); False if none runs."""
        ...

    def cleanup(self) -> None: ...


class LiveSource:
    """Runs the workload for real: a :class:`Session` per run."""

    rerunnable = True
    timed = True

    def __init__(self, config: RunConfig):
        self.config = config
        self.title = os.path.basename(config.script)
        self.device = config.device
        self._session: Session | None = None
        self._lock = threading.Lock()

    def ready_events(self) -> list[Event]:
        return []  # everything comes from the run

    def run(self, emit: Emit) -> None:
        # Here, not at the top: a report or a trace opened in the app runs no session,
        # and its first painted row waited ~40 ms for this module's imports.
        from torchscan_tui.run.session import Session

        session = Session(self.config, emit)
        with self._lock:
            previous, self._session = self._session, session
        if previous is not None:
            previous.cleanup()
        session.run()

    def damaged_end(self, detail: str | None = None) -> RunFinished:
        # Never asked: a live run's rows are checked as the channel decodes them.
        return RunFinished("failed", f"rows of the wrong type: {detail}", {}, False)

    def cancel(self) -> None:
        with self._lock:
            session = self._session
        if session is not None:
            session.cancel()

    def stop_peak(self) -> bool:
        with self._lock:
            session = self._session
        return session is not None and session.stop_peak_pass("you")

    def cleanup(self) -> None:
        with self._lock:
            session = self._session
        if session is not None:
            session.cleanup()


def opened_events(report: Report) -> list[Event]:
    """A file's report opened: the phase, the peak it kept, its head."""
    run: RunStatus = report.get("run") or {}
    events: list[Event] = [PhaseChanged("opened")]
    rss = (report.get("totals") or {}).get("process_peak_rss")
    if rss is not None:
        events.append(
            RssMeasured(
                rss,
                run.get("rss_status") or {},
                run.get("rss_wall_seconds"),
                run.get("rss_samples") or [],
            )
        )
    events.append(ProfileMeta(head_of(report)))
    return events


def _row_batches(rows: list) -> list[Event]:
    return [
        RowsReceived(rows[start : start + ROW_BATCH]) for start in range(0, len(rows), ROW_BATCH)
    ]


def report_finished(
    report: Report, rows: int | None = None, trace: KeptTrace | None = None
) -> RunFinished:
    """A file's report shown whole: ``rows`` of it (all, by default), done; incomplete
    where the file says so, with its note as the message."""
    if rows is None:
        rows = len(report.get("operators") or [])
    run = report.get("run") or {}
    complete = bool(run.get("complete", True))
    from_trace = (report.get("context") or {}).get("source") == TRACE_SOURCE
    message = f"{rows} rows from {'a trace' if from_trace else 'a saved report'}"
    note = run.get("note")
    if not complete and note:  # why the file's rows are incomplete
        message = note
    return RunFinished("done", message, report, complete, trace=trace)


class ReportSource:
    """A saved report, shown as if its run had just finished. Not rerunnable here.

    Rows the opener left undecoded (``pending``) are sent as text, in parts, for the app
    to decode: the first page reaches the screen without waiting for the other 100k.
    ``trace``: the trace file itself, when the file opened was one (held open by the
    opener: the only trace ``t`` exports; a saved report's ``trace_path`` is a hint).
    """

    rerunnable = False
    timed = False

    def __init__(
        self,
        report: Report,
        path: str,
        pending: PendingRows | None = None,
        trace: KeptTrace | None = None,
    ):
        self.report = report
        self.pending = pending if pending is not None else PendingRows()
        self.trace = trace
        self.path = path
        self.title = os.path.basename(path)
        self.device = (report.get("context") or {}).get("device", "?")

    def ready_events(self) -> list[Event]:
        """The report's header and its decoded first rows: in the first frame, rather than
        a drain tick (~50 ms) after a thread has handed them over."""
        return [*opened_events(self.report), *_row_batches(self.report["operators"])]

    def run(self, emit: Emit) -> None:
        """Each part of the rows past the first page, then the end. A file's rows are
        read a piece at a time as the parts go: damage, or the file changing, may be
        found after some were sent (the end then counts them)."""
        shown = len(self.report["operators"])
        map_large_blocks()
        try:
            for part in self.pending.split():
                emit(RowTextsReceived(part))
                shown += len(part)
                time.sleep(0)  # each part is copied here: let the app paint between them
        except RowsUnreadable as exc:  # the file changed, or holds too much
            emit(self.unread_end(str(exc), shown))
            return
        except ValueError:  # the rows past those sent are not JSON
            emit(self.damaged_end(shown=shown))
            return
        emit(report_finished(self.report, shown, self.trace))

    def damaged_end(self, detail: str | None = None, shown: int | None = None) -> RunFinished:
        """The rows decoded so far, marked incomplete with a note that names the file and
        says what to do (a report saved from them keeps it). ``detail``: the first row and
        field of the wrong type; without it the rest are not JSON, and the decoder's own
        words are left out (its byte offsets count from the rows, not the file's start).
        ``shown``: the rows sent before the damage (the first page's, by default)."""
        shown = len(self.report["operators"]) if shown is None else shown
        problem = detail or "the rest are not valid JSON"
        message = (
            f"{self.path} is damaged after its first {shown} rows ({problem}): showing "
            "those; open an intact copy for the rest"
        )
        return self._incomplete(message)

    def _incomplete(self, message: str) -> RunFinished:
        """The rows decoded so far, the report marked incomplete with ``message``."""
        cut: Report = {**self.report, "run": incomplete_run(self.report.get("run"), message)}
        return report_finished(cut, trace=self.trace)

    def unread_end(self, reason: str, shown: int) -> RunFinished:
        """As :meth:`damaged_end`, for rows past the ``shown`` ones that were not read:
        the file changed on disk, or the rest is over a limit (``reason`` says which)."""
        message = f"{self.path}: only its first {shown} rows are shown, as {reason}"
        return self._incomplete(message)

    def cancel(self) -> None:
        pass  # nothing runs

    def stop_peak(self) -> bool:
        return False  # nothing runs

    def cleanup(self) -> None:
        self.pending.close()  # rows never read (the app left first): their file
        if self.trace is not None:
            self.trace.close()
