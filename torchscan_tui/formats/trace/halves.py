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

A ``.gz`` file (what ``tensorboard_trace_handler(use_gzip=True)`` writes) is split too,
by the size its trailer says it inflates to: each process inflates it from the start and
finds the same cut in the inflated text (the child only inflates up to it, about a third
of what decoding that half costs).

Nothing here changes what is read, only where. A ``}, {`` at the middle that is not
between two events (inside a string) fails the proof, and the file is streamed whole in
this process; a child that fails in any way (killed, damaged events past the middle, a
result that will not pickle, past its time) has this process read the rest itself from
the proven start, meeting the same errors a single reader meets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from torchscan_tui.common.forked import Forked, can_fork, patience
from torchscan_tui.formats.jsonio import (
    STREAM_CHUNK,
    Progress,
    inflate_limit,
    inflated_at_offsets,
    inflated_size,
    no_progress,
)
from torchscan_tui.formats.trace.columns import ColumnReader, TraceColumns
from torchscan_tui.formats.trace.decode import DecodedTrace
from torchscan_tui.formats.trace.salvage import EVENT_BOUNDARY
from torchscan_tui.formats.trace.stream import (
    NotAnEventEnd,
    NotStreamable,
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


def read_tail(chunks: Callable[[], Iterator[bytes]], source: str) -> TailRead:
    """The events in ``chunks()`` (the file's bytes from an event's ``{`` to its end),
    read into columns."""
    reader, count = ColumnReader(source), ObjectCount()
    suffix = stream_tail(chunks(), reader.add, count)
    return TailRead(reader, suffix, count.objects, os.getpid())


class _Halves(NamedTuple):
    """Where a file is cut: its bytes up to the cut (``head()``: read here), from there
    to its end (``tail()``: read in the child), and about what share of it the head is."""

    head: Callable[[], Iterator[bytes]]
    tail: Callable[[], Iterator[bytes]]
    share: float


def read_in_halves(
    descriptor: int,
    source: str,
    progress: Progress = no_progress,
    early: EarlyRows | None = None,
) -> SplitRead | None:
    """The trace file ``source``, open as ``descriptor`` (read at offsets, never by its
    name again), read with its halves in two processes (see the module). None where it
    is not split (under :data:`SPLIT_FROM_BYTES` of JSON, no second core, no event start
    near the middle, or one that proves not to be): the caller reads it in one process.
    Raises what streaming it in one process raises (NotStreamable, ReportError, OSError,
    and a ``.gz``'s errors). ``early``: the first half's reading hands the rows of its
    part over (:mod:`~torchscan_tui.formats.early_rows`), as one reader's would."""
    if not can_fork():
        return None
    planned = _compressed_halves if source.endswith(".gz") else _plain_halves
    halves = planned(descriptor, progress)
    if halves is None:
        return None
    reader, count = ColumnReader(source), ObjectCount()
    began = time.monotonic()
    with Forked(partial(read_tail, halves.tail, source)) as tail:
        try:
            add = reader.add if early is None else early.consume(reader, share=halves.share)
            prefix = stream_head(halves.head(), add, count)
        except NotAnEventEnd:
            return None
        rest = tail.result(timeout=patience(time.monotonic() - began))
    count.add_objects(rest.objects)
    reader.extend(rest.reader)
    return SplitRead(trace_header(prefix, rest.suffix), reader.finish(), rest.pid)


def _plain_halves(descriptor: int, progress: Progress) -> _Halves | None:
    """A plain file is cut where an event starts near its middle, found by reading there."""
    size = os.fstat(descriptor).st_size
    if size < SPLIT_FROM_BYTES:
        return None
    cut = _event_start(descriptor, int(size * HEAD_SHARE))
    if cut is None:
        return None
    end, start = cut
    return _Halves(
        head=partial(range_chunks, descriptor, 0, end, progress),
        tail=partial(range_chunks, descriptor, start),
        share=end / size,
    )


def _compressed_halves(descriptor: int, progress: Progress) -> _Halves | None:
    """A ``.gz`` has no offsets into its JSON: each process inflates it from its start,
    and each finds the same cut, the first event start past the middle its trailer
    gives (this one reads and decodes up to it; the child only inflates that far, about
    a third of the time decoding takes, and reads on from it). A trailer that misleads
    (a file cut short, several members, past 4 GiB) moves the cut, never what is read:
    the head still proves it."""
    said = inflated_size(descriptor)
    compressed = os.fstat(descriptor).st_size
    if said is None or not SPLIT_FROM_BYTES <= said <= inflate_limit(compressed):
        return None  # small, or said past the limit: one reader (and its error)
    middle = int(said * HEAD_SHARE)

    def head_progress(stage: str, fraction: float) -> None:
        progress(stage, min(fraction / HEAD_SHARE, 1.0))  # the head is the first half

    return _Halves(
        head=lambda: _head_to_cut(inflated_at_offsets(descriptor, head_progress), middle),
        tail=lambda: _tail_from_cut(inflated_at_offsets(descriptor), middle),
        share=HEAD_SHARE,
    )


def _head_to_cut(chunks: Iterator[bytes], middle: int) -> Iterator[bytes]:
    """The bytes of ``chunks`` up to the end of the event before the cut (see
    :func:`_window_at`); NotAnEventEnd where there is no cut."""
    window = yield from _window_at(chunks, middle)
    cut = _cut_in(window)
    if cut is None:
        raise NotAnEventEnd("no event start near the middle of the inflated text")
    yield window[: cut[0]]


def _tail_from_cut(chunks: Iterator[bytes], middle: int) -> Iterator[bytes]:
    """The bytes of ``chunks`` from the ``{`` of the event at the cut to their end."""
    before = _window_at(chunks, middle)
    while True:  # the bytes before the middle are only inflated, never decoded
        try:
            next(before)
        except StopIteration as reached:
            window = reached.value
            break
    cut = _cut_in(window)
    if cut is None:
        raise NotStreamable("no event start near the middle of the inflated text")
    yield window[cut[1] :]
    yield from chunks


def _window_at(chunks: Iterator[bytes], middle: int) -> Generator[bytes, None, bytes]:
    """Yields the bytes of ``chunks`` before ``middle``, then returns the next
    :data:`MIDDLE_WINDOW` bytes or more (fewer where the text ends first), where both
    processes look for the same cut (:func:`_cut_in`). The chunks after the window are
    left in ``chunks``."""
    offset = 0
    for chunk in chunks:
        if offset + len(chunk) <= middle:
            offset += len(chunk)
            yield chunk
            continue
        inside = middle - offset  # the middle falls in this chunk
        if inside:
            yield chunk[:inside]
        window = bytearray(chunk[inside:])
        while len(window) < MIDDLE_WINDOW:
            more = next(chunks, None)
            if more is None:
                break
            window += more
        return bytes(window)
    return b""


def _event_start(descriptor: int, middle: int) -> tuple[int, int] | None:
    """The cut in the plain file from ``middle`` on (see :func:`_cut_in`), as offsets."""
    cut = _cut_in(os.pread(descriptor, MIDDLE_WINDOW, middle))
    return None if cut is None else (middle + cut[0], middle + cut[1])


def _cut_in(window: bytes) -> tuple[int, int] | None:
    """The first ``}, {`` in the window's first :data:`MIDDLE_WINDOW` bytes: where the
    ``}`` ends (an event's end, if it is between two events) and where the ``{`` is.
    None: none there. Where both halves of a file are cut, plain or inflated."""
    found = EVENT_BOUNDARY.search(window, 0, MIDDLE_WINDOW)
    return None if found is None else (found.start() + 1, found.end() - 1)


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
