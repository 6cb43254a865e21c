"""One source's runs, as the profile screen sees them: events in, batches out.

The driver owns the source, the :class:`~torchscan_tui.ui.event_pump.EventPump` its
thread pushes into and the :class:`~torchscan_tui.ui.run_state.RunState` the events
build; the screen takes a batch on its timer (:meth:`RunDriver.take`), applies the rows
to its view and renders. No Textual here: the screen runs :meth:`run` in its Textual
worker and says what a batch means on screen; the rules of a run (start after the first
frame, what ends it, what to say when it ends) are tested without an app.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from torchscan_tui.run.events import RunFinished
from torchscan_tui.run.sources import RunSource
from torchscan_tui.ui.action_rules import Severity
from torchscan_tui.ui.event_pump import Batch, EventPump
from torchscan_tui.ui.run_state import RunState

FIRST_FRAME_WAIT_S = 2.0  # the run starts after the first frame, or after this at most
QUIT_WAIT_SECONDS = 1.8

Notice = tuple[str, str, Severity, float | None]
"""``(message, title, severity, timeout)``: what the screen says when a run ends."""


class RunDriver:
    def __init__(self, source: RunSource, pump: EventPump | None = None):
        self.source = source
        self.pump = pump or EventPump()
        self.state = RunState()
        self.finished_count = 0
        self._leaving = False
        self._first_frame = threading.Event()

    def restart(self) -> None:
        """A new run: forget the last, and queue what is known before anything runs (a
        reopened report's header and first page, applied before the first frame)."""
        self.state.start()
        self.pump.restart()
        self._first_frame.clear()
        for event in self.source.ready_events():
            self.pump.push(event)

    def first_frame_out(self) -> None:
        self._first_frame.set()

    def run(self) -> None:
        """The source's run, on a worker thread, once the first frame is out: a reopened
        report's thread first splits 100k rows (~50 ms holding the interpreter), which
        that frame need not wait for."""
        self._first_frame.wait(FIRST_FRAME_WAIT_S)
        if not self._leaving:  # quit before the first frame: start nothing to cancel
            self.source.run(self.pump.push)

    def broke(self, message: str) -> None:
        """The run's thread raised: after the events already queued, so nothing queued
        can overwrite "failed"."""
        self.pump.push(RunFinished("failed", f"the run broke: {message}", {}, False))

    def take(self) -> Batch | None:
        """The events that arrived, applied to the state; None when none did."""
        if not self.pump:
            return None
        batch = self.pump.take(self._damaged)
        for event in batch.events:
            self.state.apply(event)
        if batch.finished:
            self.finished_count += 1
        return batch

    def _damaged(self, detail: str) -> RunFinished:
        """Rows sent as text held one of the wrong type: the source says what that means."""
        return self.source.damaged_end(detail)

    def end_notices(self) -> list[Notice]:
        """What to say as a run ends: how it ended (unless plainly done), and processes
        the workload left behind that were ended with it."""
        state = self.state
        notices: list[Notice] = []
        if state.outcome == "failed":
            notices.append((state.message, "Run failed", "error", 15))
        elif state.outcome == "cancelled":
            notices.append((state.message, "Cancelled", "warning", None))
        elif not state.complete:
            notices.append((state.message, "Incomplete", "warning", None))
        leftovers = ((state.report or {}).get("run") or {}).get("profile_leftovers")
        if leftovers:
            notices.append(
                (
                    f"The workload left {leftovers} process(es) running (a daemon, a worker "
                    "it did not join); all were ended with the run.",
                    "Processes ended",
                    "warning",
                    None,
                )
            )
        return notices

    def begin_leaving(self) -> None:
        """From now on no run starts; a source still waiting for the first frame wakes
        and does nothing (quit, unmount and a hang-up all come here first)."""
        self._leaving = True
        self._first_frame.set()
        self.pump.close()  # a source waiting for room in the pump goes on, and ends

    def leave(self) -> None:
        """The screen goes: the run is cancelled and its private files removed (after a
        quit it is cancelled already; again is harmless)."""
        self.begin_leaving()
        self.source.cancel()
        self.source.cleanup()

    def leave_after_hangup(self, finished: Callable[[], bool]) -> None:
        """From a thread, the terminal gone: cancel, wait for the run as quit does, clean up."""
        self.begin_leaving()
        self.source.cancel()
        deadline = time.monotonic() + QUIT_WAIT_SECONDS
        while not finished() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.source.cleanup()
