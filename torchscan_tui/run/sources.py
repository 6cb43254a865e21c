"""Where a run's events come from (no torch, no textual).

The app is handed a source and never knows which: a live :class:`LiveSource` (the RSS
child and the profile worker), a :class:`ReportSource` (a saved report, reopened without
torch) or a :class:`ReplaySource` (recorded events, for tests and demos). ``run`` blocks
and is called from a worker thread; ``emit`` is thread-safe on the app's side.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from torchscan_tui.formats.report import ROW_BATCH, PendingRows, incomplete_run
from torchscan_tui.run.session import (
    Event,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RowTextsReceived,
    RssMeasured,
    RunConfig,
    RunFinished,
    Session,
)

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

    def cancel(self) -> None: ...

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
        session = Session(self.config, emit)
        with self._lock:
            previous, self._session = self._session, session
        if previous is not None:
            previous.cleanup()
        session.run()

    def cancel(self) -> None:
        with self._lock:
            session = self._session
        if session is not None:
            session.cancel()

    def cleanup(self) -> None:
        with self._lock:
            session = self._session
        if session is not None:
            session.cleanup()


def report_events(report: dict) -> list[Event]:
    """The events that replay a saved report into the UI."""
    return [
        *_report_opened(report),
        *_row_batches(report.get("operators") or []),
        _finished(report),
    ]


def _report_opened(report: dict) -> list[Event]:
    run = report.get("run") or {}
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
    events.append(
        ProfileMeta(
            report.get("context") or {},
            report.get("diagnostics") or [],
            {k: v for k, v in (report.get("totals") or {}).items() if k != "process_peak_rss"},
            report.get("trace_path"),
            report.get("kernels") or [],
        )
    )
    return events


def _row_batches(rows: list) -> list[Event]:
    return [
        RowsReceived(rows[start : start + ROW_BATCH]) for start in range(0, len(rows), ROW_BATCH)
    ]


def _finished(report: dict, rows: int | None = None) -> RunFinished:
    if rows is None:
        rows = len(report.get("operators") or [])
    run = report.get("run") or {}
    complete = bool(run.get("complete", True))
    message = f"{rows} rows from a saved report"
    if not complete and run.get("note"):  # why the file's rows are incomplete
        message = run["note"]
    return RunFinished("done", message, report, complete)


class ReplaySource:
    """Emits recorded events. With ``hold``, waits before the last event until released
    or cancelled, so tests can watch (and cancel) a run in progress."""

    rerunnable = True
    timed = True

    def __init__(
        self,
        events: Sequence[Event],
        *,
        title: str = "replay.py",
        device: str = "cpu",
        hold: threading.Event | None = None,
    ):
        self.events = list(events)
        self.title = title
        self.device = device
        self.hold = hold
        self.runs = 0
        self._cancelled = threading.Event()

    def ready_events(self) -> list[Event]:
        return []  # recorded events play as a run sends them

    def run(self, emit: Emit) -> None:
        self.runs += 1
        self._cancelled.clear()
        *body, last = self.events
        for event in body:
            emit(event)
        if self.hold is not None:
            while not self.hold.is_set() and not self._cancelled.is_set():
                self.hold.wait(0.01)
        if self._cancelled.is_set():
            report = last.report if isinstance(last, RunFinished) else {}
            emit(PhaseChanged("cancelled"))
            emit(RunFinished("cancelled", "cancelled", report, False))
            return
        emit(last)

    def cancel(self) -> None:
        self._cancelled.set()

    def cleanup(self) -> None:
        pass


class ReportSource:
    """A saved report, shown as if its run had just finished. Not rerunnable here.

    Rows the opener left undecoded (``pending``) are sent as text, in parts, for the app
    to decode: the first page reaches the screen without waiting for the other 100k.
    """

    rerunnable = False
    timed = False

    def __init__(self, report: dict, path: str, pending: PendingRows | None = None):
        self.report = report
        self.pending = pending if pending is not None else PendingRows()
        self.path = path
        self.title = os.path.basename(path)
        self.device = (report.get("context") or {}).get("device", "?")

    def ready_events(self) -> list[Event]:
        """The report's header and its decoded first rows: in the first frame, rather than
        a drain tick (~50 ms) after a thread has handed them over."""
        return [*_report_opened(self.report), *_row_batches(self.report["operators"])]

    def run(self, emit: Emit) -> None:
        try:
            total = len(self.report["operators"]) + len(self.pending)
        except ValueError:  # the rows past the first page are not JSON
            emit(self.damaged())
            return
        for part in self.pending.split():
            emit(RowTextsReceived(part))
            time.sleep(0)  # each part is copied here: let the app paint between them
        emit(_finished(self.report, total))

    def damaged(self, detail: str | None = None) -> RunFinished:
        """The rows decoded so far, marked incomplete with a note that names the file and
        says what to do (a report saved from them keeps it). ``detail``: the first row and
        field of the wrong type; without it the rest are not JSON, and the decoder's own
        words are left out (its byte offsets count from the rows, not the file's start)."""
        shown = len(self.report["operators"])
        problem = detail or "the rest are not valid JSON"
        message = (
            f"{self.path} is damaged after its first {shown} rows ({problem}): showing "
            "those; open an intact copy for the rest"
        )
        return _finished({**self.report, "run": incomplete_run(self.report.get("run"), message)})

    def cancel(self) -> None:
        pass  # nothing runs

    def cleanup(self) -> None:
        pass
