"""The run's events, from the source's thread to the screen, in batches bounded in time.

The source runs in a thread and :meth:`EventPump.push` es each event it makes; the screen
takes a :class:`Batch` on a timer and applies it in one ``batch_update()``, so a flood of
rows or output never re-renders per item. Rows a reopened report sent as text are decoded
here, a part per slice: after a short settle (the first page painted first), and with the
cyclic collector off while they decode (its passes over the growing rows took up to 0.2 s
each). No Textual here: the pump is tested on its own.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from torchscan_tui.common.gcpause import GcBurst, freeze_long_lived
from torchscan_tui.common.memory import return_free_memory
from torchscan_tui.run.events import RowsReceived, RowsReplaced, RowTextsReceived, RunFinished

MAX_EVENTS_PER_BATCH = 5000
# Events are taken for at most this long at a time (rows sent as text are decoded then),
# the rest after waiting keys and a frame.
SLICE_S = 0.012
# Rows sent as text wait this long after a run starts: the first page is painted and
# Textual's start-up (the footer composed several times over) is done by then. Slices of
# decoding leave too little idle time for a footer recompose, and the screen paints
# nothing while one is in flight.
DECODE_SETTLE_S = 0.4

Damaged = Callable[[str], RunFinished]
"""What a row of the wrong type means: the run's end, with the rows before it kept."""


@dataclass
class Batch:
    """Events to apply at once. ``rows``: every row among them, in order, for one extend
    of the view; ``replace``: they replace the view's rows instead (a RowsReplaced came,
    and the rows before it in the batch went with it); ``events``: the others; ``has_more``:
    events are left for a moment later."""

    events: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    has_more: bool = False
    replace: bool = False

    @property
    def finished(self) -> bool:
        return any(isinstance(event, RunFinished) for event in self.events)


class EventPump:
    """A thread-safe inbox (``deque.append`` is atomic) handed out in bounded batches."""

    def __init__(
        self,
        settle_s: float = DECODE_SETTLE_S,
        slice_s: float = SLICE_S,
        max_events: int = MAX_EVENTS_PER_BATCH,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._inbox: deque = deque()
        self._settle_s, self._slice_s, self._max_events = settle_s, slice_s, max_events
        self._clock = clock
        self._decode_from = 0.0
        self._decoding = GcBurst()

    def push(self, event: object) -> None:
        """From any thread: the source's ``emit``."""
        self._inbox.append(event)

    def restart(self) -> None:
        """A new run: forget what the last one left, and settle before decoding again."""
        self._inbox.clear()
        self._decode_from = self._clock() + self._settle_s

    def __bool__(self) -> bool:
        return bool(self._inbox)

    def take(self, damaged: Damaged) -> Batch:
        """The events that arrived, up to a slice of work; text rows decoded on the way.

        A row of the wrong type ends the run there (``damaged``); the rest of the inbox
        (the other parts, the source's own finish) goes with it.
        """
        batch = Batch()
        budget = self._max_events
        deadline = self._clock() + self._slice_s
        inbox = self._inbox
        while inbox and budget:
            budget -= 1
            event = inbox.popleft()
            if isinstance(event, RowTextsReceived):
                if self._clock() < self._decode_from:  # settle first: see DECODE_SETTLE_S
                    inbox.appendleft(event)  # for a later tick
                    break
                self._decoding.set(True)
                try:
                    event = RowsReceived(event.texts.decode())
                except ValueError as exc:
                    inbox.clear()
                    event = damaged(str(exc))
            if isinstance(event, RowsReceived):
                batch.rows.extend(event.rows)
            elif isinstance(event, RowsReplaced):
                batch.rows, batch.replace = list(event.rows), True
            else:
                batch.events.append(event)
            if inbox and self._clock() > deadline:
                batch.has_more = True
                break
        if self._decoding.active:
            return_free_memory()  # the decoded parts' bytes: see memory.py
            if not inbox:
                # Decoded rows stay for the app's life: out of the collector's way, then on.
                freeze_long_lived()
                self._decoding.set(False)
        return batch
