"""The run's events, from the source's thread to the screen, in batches bounded in time.

The source runs in a thread and :meth:`EventPump.push` es each event it makes; the screen
takes a :class:`Batch` on a timer and applies it in one ``batch_update()``, so a flood of
rows or output never re-renders per item. Rows a reopened report sent as text are decoded
here, a part per slice: after a short settle (the first page painted first), and with the
cyclic collector off while they decode (its passes over the growing rows took up to 0.2 s
each). No Textual here: the pump is tested on its own.
"""

from __future__ import annotations

import threading
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
# Parts of rows sent as text (1000 rows, ~1 MiB each) that may wait in the inbox: the
# source's thread reads and copies them faster than the app decodes them, and 100k rows
# piling up as text held ~25 MiB over what the rows settle at (issue 31's 150 MiB).
TEXT_PARTS_AHEAD = 2

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
        parts_ahead: int = TEXT_PARTS_AHEAD,
    ):
        self._inbox: deque = deque()
        self._settle_s, self._slice_s, self._max_events = settle_s, slice_s, max_events
        self._clock = clock
        self._decode_from = 0.0
        self._decoding = GcBurst()
        self._parts_ahead = parts_ahead
        self._texts_waiting = 0  # RowTextsReceived in the inbox
        self._room = threading.Condition()
        self._closed = False
        self._ended = False  # a damaged part ended the run: its source's later events drop

    def push(self, event: object) -> None:
        """From any thread: the source's ``emit``. Rows as text wait for room first (up
        to ``parts_ahead`` undecoded parts), except on the app's own thread (it would wait
        for itself) and once the pump is closed; after a damaged part ended the run,
        nothing more of it is taken in."""
        text = type(event) is RowTextsReceived
        with self._room:
            if text and threading.current_thread() is not threading.main_thread():
                while self._texts_waiting >= self._parts_ahead and not (
                    self._closed or self._ended
                ):
                    self._room.wait(0.1)
            if self._ended:
                return
            self._texts_waiting += text
            self._inbox.append(event)

    def _text_taken(self) -> None:
        """A part of text left the inbox: room for another."""
        with self._room:
            self._texts_waiting = max(0, self._texts_waiting - 1)
            self._room.notify_all()

    def _forget(self, ended: bool) -> None:
        """Drop what is queued; ``ended``: and whatever the run's source sends after."""
        with self._room:
            self._inbox.clear()
            self._texts_waiting = 0
            self._ended = ended
            self._room.notify_all()

    def close(self) -> None:
        """Nothing more will be taken (the app is leaving): a source waiting for room
        goes on, so its thread can end."""
        with self._room:
            self._closed = True
            self._room.notify_all()

    def restart(self) -> None:
        """A new run: forget what the last one left, and settle before decoding again."""
        self._forget(ended=False)
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
                self._text_taken()
                try:
                    event = RowsReceived(event.texts.decode())
                except ValueError as exc:
                    # The run ends here: what is queued goes, and what its source (still
                    # reading, as it waits for room) sends from now on is dropped.
                    self._forget(ended=True)
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
