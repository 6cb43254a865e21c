"""Decode a trace's events a piece at a time, never the whole file nor every event at once.

A 1M-event trace is ~300 MiB of JSON; decoded whole it also held a typed event for each
of its events (~1 KiB apiece with their strings): 5x the file in memory. Here the file is
read in pieces, the event array is cut between two events, and each piece is decoded on
its own (:class:`~torchscan_tui.formats.trace.decode.EventDecoder`) and handed to a
consumer that keeps what it needs (the reader's columns) before the next is read.

A cut is made only where the text before it decodes as a whole array of events: JSON's
grammar reads a prefix as the full text does, so a ``}, {`` inside a string or a nested
array never decodes and is never taken for a boundary. The fields around the array are
read by decoding the file's head and tail with an empty array between them. Anything this
does not follow (no ``traceEvents`` in the first MiB, a byte order mark, a file cut short,
events that are not objects, a second ``traceEvents``) raises :class:`NotStreamable`, and
the caller reads the file whole, as before, with its errors and repairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

import msgspec

from torchscan_tui.formats.jsonio import failed_on_utf8, max_objects, utf8_replaced
from torchscan_tui.formats.trace.decode import DecodedTrace, EventDecoder, decode_header
from torchscan_tui.formats.trace.salvage import EVENT_BOUNDARY, EVENTS_KEY

# ~900 events a piece: their decoded objects (~0.4 MiB) fit in the one empty arena Python
# keeps, so a piece reuses the pages the last one let go. Pieces of 8 MiB (~30 MiB of
# objects) had Python hand their arenas back and map fresh ones for the next, page by
# page: a 1M-event trace's stream took 190k page faults and 2.25 s, now 30k and 1.7 s.
BATCH_BYTES = 256 << 10
HEAD_LIMIT = 1 << 20  # where ``"traceEvents": [`` must start (after deviceProperties)
NEAR_WINDOW = 1 << 13  # where boundaries are looked for first (events are ~0.3 KiB)
BOUNDARY_WINDOW = 1 << 16  # how far back they are looked for next
TRIES = 4  # boundaries tried from the last before giving up on a piece
TAIL_TRIES = 256  # ``]`` tried as the array's end (the last event's shapes hold some)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
OPEN, CLOSE = b"[]"
Decode = Callable[[bytes | memoryview], list]


class NotStreamable(Exception):
    """The file is not a trace this reader follows: read it whole instead."""


class NotAnEventEnd(NotStreamable):
    """A cut taken for an event's end is not one (:func:`stream_head`)."""


def stream_trace(chunks: Iterable[bytes], consume: Callable[[list], None]) -> DecodedTrace:
    """Feed the events of the trace in ``chunks`` (the file's bytes in order) to
    ``consume`` a batch at a time; returns the trace's other fields (``events`` empty).
    Raises NotStreamable (see the module), or what reading the chunks raises."""
    decode, count = EventDecoder().decode, ObjectCount()
    pieces = iter(chunks)
    prefix, work = _array_start(pieces, count)
    work, start = _fed(decode, work, pieces, count, consume)
    return trace_header(prefix, _array_end(decode, work, start, consume))


def stream_head(
    chunks: Iterable[bytes], consume: Callable[[list], None], count: ObjectCount
) -> bytes:
    """As :func:`stream_trace`, for a trace's first bytes up to the ``}`` that ends one of
    its events (the chunks end there); returns the text before the event array. Raises
    NotAnEventEnd where the last ``}`` is not an event's end (the text up to it does not
    decode as a whole array of events); the objects read are counted in ``count``."""
    decode = EventDecoder().decode
    pieces = iter(chunks)
    prefix, work = _array_start(pieces, count)
    work, start = _fed(decode, work, pieces, count, consume)
    work += b" "  # the byte after the last event, which _decode_piece stands "]" in
    try:
        events = _decode_piece(decode, work, start, len(work) - 2)
    except _DECODE_ERRORS:
        raise NotAnEventEnd("the text up to the cut is not whole events") from None
    consume(events)
    return prefix


def stream_tail(
    chunks: Iterable[bytes], consume: Callable[[list], None], count: ObjectCount
) -> bytes:
    """As :func:`stream_trace`, for a trace's bytes from the ``{`` that starts one of its
    events to the file's end; returns the text after the event array. Which ``{`` is an
    event's start is not proven here: the caller proves it (:func:`stream_head` up to
    the event before it)."""
    decode = EventDecoder().decode
    work, start = _fed(decode, bytearray(b" "), iter(chunks), count, consume)
    return _array_end(decode, work, start, consume)


def trace_header(prefix: bytes, suffix: bytes) -> DecodedTrace:
    """The trace's fields but its events, from the text before and after its event array
    (NotStreamable where they are not a trace's)."""
    header = decode_header(prefix + b"[]" + suffix)
    if header is None or b'"traceEvents"' in suffix:
        raise NotStreamable("the fields after the events are not a trace's")
    return header


def _array_start(pieces: Iterator[bytes], count: ObjectCount) -> tuple[bytes, bytearray]:
    """The text before the event array, and a buffer of the bytes read after it from its
    "[" on (the first event starts a byte into the buffer, or later past white space)."""
    head, key = _head(pieces)
    if key is None or head.startswith(b"\xef\xbb\xbf") or 0 in head[:2]:
        raise NotStreamable("no traceEvents array near the start of UTF-8 JSON")
    count.add(head)
    return head[: key.end() - 1], bytearray(head[key.end() - 1 :])


def _fed(
    decode: Decode,
    work: bytearray,
    pieces: Iterator[bytes],
    count: ObjectCount,
    consume: Callable[[list], None],
) -> tuple[bytearray, int]:
    """Every piece of ``pieces`` added to ``work`` (whose events start a byte in) and its
    whole events consumed a batch at a time, but for the last ~two batches' bytes: the
    buffer then, and where the events left in it start."""
    # The pieces are decoded where they lie in one buffer: a piece's bracket bytes are
    # swapped in around it (see _decode_piece), so no piece is copied, and the buffer's
    # pages are reused from piece to piece.
    start = 1
    for chunk in pieces:
        count.add(chunk)
        work += chunk  # no view of it is held here (see _dropped)
        if len(work) - start >= 2 * BATCH_BYTES:
            start = _feed(decode, work, start, consume)
            work, start = _dropped(work, start - 1), 1  # the byte before the next event kept
    return work, _feed(decode, work, start, consume)


def _array_end(
    decode: Decode, work: bytearray, start: int, consume: Callable[[list], None]
) -> bytes:
    """The last events (``work`` from ``start``: up to the file's end) consumed; the text
    after the event array."""
    events, start = _cut(decode, work, start, len(work), at_end=True)
    if events:
        consume(events)
    events, suffix = _last_events(decode, bytes(work[start:]))
    if events:
        consume(events)
    return suffix


class ObjectCount:
    """The ``{`` bytes read so far, as jsonio.check_object_count counts a whole file: past
    its limit, NotStreamable (read whole, the file is refused naming the limit)."""

    def __init__(self) -> None:
        self.objects, self.limit = 0, max_objects()

    def add(self, chunk: bytes) -> None:
        self.add_objects(chunk.count(b"{"))

    def add_objects(self, objects: int) -> None:
        """Count ``objects`` more (those another reader of the same file counted)."""
        self.objects += objects
        if self.objects > self.limit:
            raise NotStreamable("more JSON objects than are read at once")


def _head(pieces: Iterator[bytes]) -> tuple[bytes, re.Match[bytes] | None]:
    """The file's first bytes, up to and past where the event array starts, and where
    it starts (None: not within :data:`HEAD_LIMIT`)."""
    head = b""
    for chunk in pieces:
        head += chunk
        key = EVENTS_KEY.search(head, 0, HEAD_LIMIT)
        if key is not None or len(head) >= HEAD_LIMIT:
            return head, key
    return head, None


def _dropped(work: bytearray, count: int) -> bytearray:
    """``work`` without its first ``count`` bytes: in place where nothing decoded from it
    holds a view of it any more, else (a consumer kept an event, whose Input Dims is such
    a view) a new buffer of the rest, so the bytes under that view never change. Only
    the pieces decoded just before a drop make views: a buffer is appended to with none."""
    try:
        del work[:count]
    except BufferError:
        work = work[count:]
    return work


def _feed(decode: Decode, text: bytearray, start: int, consume: Callable[[list], None]) -> int:
    """Decode and consume pieces of about :data:`BATCH_BYTES` of ``text`` from ``start``
    (an event's start, a byte after the buffer's start) while more than two are left;
    returns where the rest starts."""
    while len(text) - start >= 2 * BATCH_BYTES:
        events, start = _cut(decode, text, start, start + BATCH_BYTES)
        consume(events)
    return start


def _boundaries(text: bytes | bytearray, start: int, limit: int) -> list[int]:
    """Offsets of the ``}`` of each ``}, {`` between ``start`` and ``limit`` in ``text``,
    the nearest to ``limit`` first (those within :data:`BOUNDARY_WINDOW` of it, else any).

    The :data:`TRIES` nearest are nearly always in the last few KiB, so those are
    searched first (:data:`NEAR_WINDOW`), and the wider window only where they hold
    fewer: the same boundaries, for an eighth of the search (the regex scanned a quarter
    of every piece: ~4% of a big trace's read)."""
    for window in (NEAR_WINDOW, BOUNDARY_WINDOW):
        near = max(start, limit - window)
        found = [match.start() for match in EVENT_BOUNDARY.finditer(text, near, limit)]
        if len(found) >= TRIES or near == start:
            break
    if not found and near > start:
        found = [match.start() for match in EVENT_BOUNDARY.finditer(text, start, limit)]
    return found[::-1][:TRIES]


def _cut(
    decode: Decode, text: bytearray, start: int, limit: int, at_end: bool = False
) -> tuple[list, int]:
    """The whole events of ``text`` from ``start`` (an event's start, inside the event
    array, a byte after the buffer's start) to a boundary before ``limit``, decoded, and
    where the next event's ``{`` is. Where none of the nearest boundaries decodes:
    NotStreamable, or at the file's end nothing cut (the tail reader takes it all)."""
    for brace in _boundaries(text, start, limit):
        try:
            events = _decode_piece(decode, text, start, brace)
        except _DECODE_ERRORS:
            continue
        return events, text.index(b"{", brace + 1)
    if at_end:
        return [], start
    raise NotStreamable("no boundary between two events decodes")


def _decode_piece(decode: Decode, text: bytearray, start: int, brace: int) -> list:
    """The events of ``text[start : brace + 1]`` decoded as an array where they lie: the
    byte before ``start`` and the one after ``brace`` are between events (white space or
    the comma of ``}, {``, or the array's own "["), so "[" and "]" stand in them while the
    piece is decoded, and the file's bytes are put back after. What is decoded never sees
    them: an Input Dims kept as a view lies inside an event."""
    before, after = text[start - 1], text[brace + 1]
    text[start - 1], text[brace + 1] = OPEN, CLOSE
    try:
        return _repairing(decode, memoryview(text)[start - 1 : brace + 2])
    finally:
        text[start - 1], text[brace + 1] = before, after


def _repairing(decode: Decode, piece: bytes | memoryview) -> list:
    """``piece`` decoded; where it fails and holds bytes that are not UTF-8, decoded
    again with them made U+FFFD (a copy: :func:`~torchscan_tui.formats.jsonio.utf8_replaced`)."""
    try:
        return decode(piece)
    except msgspec.DecodeError as exc:
        repaired = utf8_replaced(piece) if failed_on_utf8(exc) else None
        if repaired is None:
            raise
    return decode(repaired)


def _last_events(decode: Decode, text: bytes) -> tuple[list, bytes]:
    """The events before the ``]`` that closes the event array (``text``: from the last
    events to the file's end), and the file's text after that ``]``."""
    close = text.find(b"]")
    for _ in range(TAIL_TRIES):
        if close == -1:
            break
        try:
            events = _repairing(decode, b"".join((b"[", text[:close], b"]")))
        except _DECODE_ERRORS:
            close = text.find(b"]", close + 1)
            continue
        return events, text[close + 1 :]
    raise NotStreamable("the event array does not end")
