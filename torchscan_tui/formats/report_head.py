"""A big saved report opened from its first and last bytes: the first page is on screen
before the rest of the file is read.

Reading a 100k-row report (104 MiB) and counting its objects took 110-190 ms here before
the app could start, for a first page that lies in the file's first MiB. A report laid
out as :func:`~torchscan_tui.formats.report.dumps_report` writes it (a row per line, the
top-level keys the only lines indented one space) is opened from its head and tail: the
keys around the rows are decoded and the first page is cut by line breaks
(:func:`~torchscan_tui.formats.report_pages.first_page_of_ends`). The rows' array is read
later, from the file held open, and only while it is the file whose ends were read
(:class:`RowsInFile`). Anything else (a small file, a ``.gz``, another layout, a first
row past the head) is read whole, as before, so its errors are the whole read's.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator

from torchscan_tui.common.file_reads import read_span
from torchscan_tui.formats.jsonio import TooManyObjects, check_object_count
from torchscan_tui.formats.report import SCHEMA_NAME
from torchscan_tui.formats.report_pages import ROW_TEXTS, PendingRows, first_page_of_ends

PIECE_BYTES = 1 << 20  # the rows' span is read this much at a time (a part's worth)
HEAD_BYTES = 1 << 20  # the keys before the rows and the first page: a few KiB each
TAIL_BYTES = 1 << 20  # the keys after the rows (steps, overview, kernels)
SMALLEST = 8 << 20  # below this a whole read is a few ms: not worth a file held open


def looks_like_report(data: bytes) -> bool:
    """Whether the file starts as our reports do (the schema key first): then the trace
    decoder's pass over it would be wasted. A file that does not is still read right."""
    return f'"schema": "{SCHEMA_NAME}"'.encode() in data[:256]


def file_identity(info: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file changed since it was read: device, inode, size, mtime."""
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


class RowsUnreadable(ValueError):
    """The rows after the first page could not be read; its text says why, to a user."""


class RowsInFile:
    """A report's rows, as a span of a file held open, read when first asked for.

    The descriptor is the file whose ends were read: a file replaced since (saved over by
    an atomic rename) is still read as it was. One written over in place is told by its
    size or modification time and refused, as is an array over the object limit (the
    guard the whole read runs before decoding anything), counted as it is read.

    :meth:`parts` reads the span a piece at a time, never holding it whole (the app's
    peak held the 104 MiB span of a 100k-row report beside the rows decoded from it);
    :meth:`read` reads it whole. Either closes the file when done or failed."""

    def __init__(self, descriptor: int, start: int, end: int, identity: tuple[int, ...]):
        self._descriptor = descriptor
        self._start, self._end = start, end
        self._identity = identity
        self._objects = 0
        # a read (a source's thread) and close (the app leaving) never overlap: a
        # descriptor closed mid-read could be another file's by the next pread
        self._lock = threading.Lock()

    def read(self) -> bytes:
        """The rows' JSON array; once. RowsUnreadable saying why when it cannot be."""
        try:
            return self._read(self._start, self._end)
        finally:
            self.close()

    def parts(self, size: int, skip: int) -> Iterator[tuple[bytes, int]]:
        """The rows after the first ``skip``, as JSON arrays of at most ``size`` rows with
        their counts, cut from a piece of the span at a time (:data:`PIECE_BYTES`, at its
        last line break: a report as we write it has a row a line).

        Each piece's rows are split by msgspec (checked as JSON, nothing built); a piece
        that does not split (rows laid out otherwise, or damage) has the rest of the span
        read whole and split, which raises ValueError if it is damage. RowsUnreadable
        as :meth:`read`. The file is closed when the rows are out, or on any error."""
        try:
            at, carry = self._start + 1, b""  # past the array's "["
            while at < self._end:
                piece = carry + self._read(at, min(at + PIECE_BYTES, self._end))
                at += len(piece) - len(carry)
                last = at >= self._end
                cut = len(piece) if last else piece.rfind(b"\n") + 1
                rows, carry = piece[:cut], piece[cut:]
                piece = b""  # not held while the parts wait to be taken
                try:
                    texts = _row_texts(rows, last)
                except ValueError:  # not a row a line, or damaged: the rest whole says
                    rest = rows + carry + self._read(at, self._end)
                    texts, at, carry = _row_texts(rest, True), self._end, b""
                if skip:
                    texts, skip = texts[skip:], max(skip - len(texts), 0)
                for first in range(0, len(texts), size):
                    chunk = texts[first : first + size]
                    yield b"[" + b",".join(chunk) + b"]", len(chunk)
        finally:
            self.close()

    def _read(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` of the file while it is still the one opened, their
        objects counted against the limit."""
        with self._lock:
            if self._descriptor < 0:
                raise RowsUnreadable("it was closed before its rows were read")
            try:
                if file_identity(os.fstat(self._descriptor)) != self._identity:
                    raise RowsUnreadable(
                        "it changed on disk after its first rows were read: reopen it for the rest"
                    )
                data = read_span(self._descriptor, start, end)
                if len(data) != end - start:
                    raise RowsUnreadable(
                        "it was cut short after its first rows were read: reopen it"
                    )
                self._objects = check_object_count(data, self._objects)
                return data
            except TooManyObjects as exc:
                raise RowsUnreadable(f"the rest is refused: {exc}") from None
            except OSError as exc:
                raise RowsUnreadable(f"the rest cannot be read: {exc.strerror or exc}") from None

    def close(self) -> None:
        with self._lock:
            if self._descriptor >= 0:
                os.close(self._descriptor)
                self._descriptor = -1


def _row_texts(rows: bytes, last: bool) -> list:
    """The JSON texts of the whole rows in ``rows`` (a stretch of the array after its
    "[": rows each ended by a comma, or by the array's "]" when ``last``); ValueError
    when they are not that."""
    body = rows.rstrip()
    if last:
        if not body.endswith(b"]"):
            raise ValueError("the rows' array does not end")
        body = body[:-1]
    return ROW_TEXTS.decode(b"[" + body.rstrip().removesuffix(b",") + b"]")


def open_report_ends(source: str, rows: int) -> tuple[dict, PendingRows] | None:
    """A big report's document with its first page of up to ``rows`` rows, and the rest
    to read later; None for any file this does not apply to (read it whole)."""
    if source.endswith(".gz"):
        return None
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    kept = False
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size < SMALLEST:
            return None
        head = os.pread(descriptor, HEAD_BYTES, 0)
        if not looks_like_report(head):
            return None
        tail_start = info.st_size - TAIL_BYTES
        tail = os.pread(descriptor, TAIL_BYTES, tail_start)
        if len(head) != HEAD_BYTES or len(tail) != TAIL_BYTES:
            return None  # shorter than it said: changing now; the whole read judges it
        check_object_count(tail, check_object_count(head))  # counted apart: no 2 MiB join
        opened = first_page_of_ends(head, tail, tail_start, rows)
        if opened is None:
            return None
        document, start, end = opened
        rest = RowsInFile(descriptor, start, end, file_identity(info))
        kept = True
        return document, PendingRows.of_array(rest, skip=len(document["operators"]))
    except (OSError, ValueError):
        return None
    finally:
        if not kept:
            os.close(descriptor)
