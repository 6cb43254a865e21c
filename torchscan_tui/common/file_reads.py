"""Reading a span of a file through a descriptor held open."""

from __future__ import annotations

import os

STEP = 1 << 24  # bytes asked for per pread: a short read is not the file's end


def read_span(descriptor: int, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of the open file, or to its end if it ends first, read
    with ``pread`` (the descriptor's offset untouched, so threads may share it)."""
    pieces, at = [], start
    while at < end and (piece := os.pread(descriptor, min(end - at, STEP), at)):
        pieces.append(piece)
        at += len(piece)
    return b"".join(pieces)
