"""Read a big trace file's events in two processes at once: its first half here, the
rest in a forked child (no torch).

Decoding a 1M-event trace's 300 MiB of JSON into columns is ~2 s of one core, and Python
runs one thread at a time. So a child (:mod:`~torchscan_tui.common.forked`) reads from an
event's start found near the file's middle to its end
(:func:`~torchscan_tui.formats.trace.stream.stream_tail`), while this process reads from
the start up to the end of the event before it and proves that end one
(:func:`~torchscan_tui.formats.trace.stream.stream_head`: the text up to it decodes as a
whole array of events, which JSON's grammar reads as the whole file does). Then it takes
in the child's columns, pickled back (half a 1M-event trace's: ~19 MiB, ~0.1 s), as if it
had read them itself (:meth:`ColumnReader.extend`).

Nothing here changes what is read, only where. A ``}, {`` at the middle that is not
between two events (inside a string) fails the proof, and the file is streamed whole in
this process; a child that fails in any way (killed, damaged events past the middle, a
result that will not pickle, past its time) has this process read the rest itself from
the proven start, meeting the same errors a single reader meets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from torchscan_tui.common.forked import Forked, can_fork, patience
from torchscan_tui.formats.jsonio import STREAM_CHUNK, Progress, no_progress
from torchscan_tui.formats.trace.columns import ColumnReader, TraceColumns
from torchscan_tui.formats.trace.decode import DecodedTrace
from torchscan_tui.formats.trace.salvage import EVENT_BOUNDARY
from torchscan_tui.formats.trace.stream import (
    NotAnEventEnd,
    ObjectCount,
    stream_head,
    stream_tail,
    trace_header,
)

if TYPE_CHECKING:
    from torchscan_tui.formats.early_rows import EarlyRows

# From this size a second process is worth its start (a fork, the columns pickled back:
# ~0.15 s in all) and its memory; the app's in-app size (formats/opening.py), ~1.5 s.
SPLIT_FROM_BYTES = 64 << 20
# Where the child starts: this process also takes in the child's columns at the end.
HEAD_SHARE = 0.5
MIDDLE_WINDOW = 1 << 20  # how far past the middle an event's start is looked for


@dataclass
class TailRead:
    """What the child read: its columns, the file's text after the event array, the
    JSON objects it counted, and which process read it (the tests' check on a fork)."""

    reader: ColumnReader
    suffix: bytes
    objects: int
    pid: int


class SplitRead(NamedTuple):
    """A trace file read in two halves: its fields but the events, its columns, and the
    process that read the second half (this one's where the child failed)."""

    header: DecodedTrace
    columns: TraceColumns
    second_half_pid: int


def read_tail(descriptor: int, start: int, source: str) -> TailRead:
    """The events of the file open as ``descriptor`` from ``start`` (an event's ``{``) to
    its end, read into columns."""
    reader, count = ColumnReader(source), ObjectCount()
    suffix = stream_tail(range_chunks(descriptor, start), reader.add, count)
    return TailRead(reader, suffix, count.objects, os.getpid())


def read_in_halves(
    descriptor: int,
    source: str,
    progress: Progress = no_progress,
    early: EarlyRows | None = None,
) -> SplitRead | None:
    """The trace file ``source``, open as ``descriptor`` (read at offsets, never by its
    name again), read with its halves in two processes (see the module). None where it
    is not split (under :data:`SPLIT_FROM_BYTES`, compressed, no second core, no event
    start near the middle, or one that proves not to be): the caller reads it in one
    process. Raises what streaming it in one process raises (NotStreamable,
    ReportError, OSError). ``early``: the first half's reading hands the rows of its
    part over (:mod:`~torchscan_tui.formats.early_rows`), as one reader's would."""
    if source.endswith(".gz") or not can_fork():
        return None
    size = os.fstat(descriptor).st_size
    if size < SPLIT_FROM_BYTES:
        return None
    cut = _event_start(descriptor, int(size * HEAD_SHARE))
    if cut is None:
        return None
    end, start = cut
    reader, count = ColumnReader(source), ObjectCount()
    began = time.monotonic()
    with Forked(partial(read_tail, descriptor, start, source)) as tail:
        head = range_chunks(descriptor, 0, end, progress)
        try:
            add = reader.add if early is None else early.consume(reader, share=end / size)
            prefix = stream_head(head, add, count)
        except NotAnEventEnd:
            return None
        rest = tail.result(timeout=patience(time.monotonic() - began))
    count.add_objects(rest.objects)
    reader.extend(rest.reader)
    return SplitRead(trace_header(prefix, rest.suffix), reader.finish(), rest.pid)


def _event_start(descriptor: int, middle: int) -> tuple[int, int] | None:
    """The first ``}, {`` from ``middle`` on: where the ``}`` ends (an event's end, if it
    is between two events) and where the ``{`` is. None: none within the window."""
    window = os.pread(descriptor, MIDDLE_WINDOW, middle)
    found = EVENT_BOUNDARY.search(window)
    if found is None:
        return None
    return middle + found.start() + 1, middle + found.end() - 1


def range_chunks(
    descriptor: int, start: int, stop: int | None = None, progress: Progress = no_progress
) -> Iterator[bytes]:
    """The bytes of the open file from ``start`` up to ``stop`` (None: its end), read at
    their offsets (``pread``: a forked child shares the descriptor, never its position)."""
    offset = start
    while stop is None or offset < stop:
        size = STREAM_CHUNK if stop is None else min(STREAM_CHUNK, stop - offset)
        chunk = os.pread(descriptor, size, offset)
        if not chunk:
            return
        offset += len(chunk)
        yield chunk
        if stop is not None:
            progress("reading", offset / max(stop, 1))
