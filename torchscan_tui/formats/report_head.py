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

from torchscan_tui.formats.jsonio import TooManyObjects, check_object_count
from torchscan_tui.formats.report import SCHEMA_NAME
from torchscan_tui.formats.report_pages import PendingRows, first_page_of_ends

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
    guard the whole read runs before decoding anything)."""

    def __init__(self, descriptor: int, start: int, end: int, identity: tuple[int, ...]):
        self._descriptor = descriptor
        self._start, self._end = start, end
        self._identity = identity
        # read (a source's thread) and close (the app leaving) never overlap: a
        # descriptor closed mid-read could be another file's by the next pread
        self._lock = threading.Lock()

    def read(self) -> bytes:
        """The rows' JSON array; once (the file is closed after). RowsUnreadable
        saying why when it cannot be."""
        with self._lock:
            return self._read_once()

    def _read_once(self) -> bytes:
        if self._descriptor < 0:
            raise RowsUnreadable("it was closed before its rows were read")
        try:
            if file_identity(os.fstat(self._descriptor)) != self._identity:
                raise RowsUnreadable(
                    "it changed on disk after its first rows were read: reopen it for the rest"
                )
            data = _read_span(self._descriptor, self._start, self._end)
            check_object_count(data)
            return data
        except TooManyObjects as exc:
            raise RowsUnreadable(f"the rest is refused: {exc}") from None
        except OSError as exc:
            raise RowsUnreadable(f"the rest cannot be read: {exc.strerror or exc}") from None
        finally:
            self._close()

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._descriptor >= 0:
            os.close(self._descriptor)
            self._descriptor = -1


def _read_span(descriptor: int, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of the file, all of them (RowsUnreadable if it ends
    first)."""
    pieces, at = [], start
    while at < end:
        piece = os.pread(descriptor, min(end - at, 1 << 26), at)
        if not piece:
            raise RowsUnreadable("it was cut short after its first rows were read: reopen it")
        pieces.append(piece)
        at += len(piece)
    return b"".join(pieces)


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
        check_object_count(head + tail)
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
