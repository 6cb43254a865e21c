"""Hand freed memory back to the system, where the C library offers a way (glibc).

A reopened report's rows decode from parts that are freed one by one, while the rows
decoded from them are allocated. glibc keeps freed blocks inside its heap, below the
rows allocated since, so the process held the parts' 27 MiB long after it stopped
using them: its peak rose from 131 to 155 MiB at 100k rows. ``malloc_trim`` returns
free pages from anywhere in the heap (~1 ms). Elsewhere (musl, macOS) this does nothing.

A big trace was read in pieces of 8-16 MiB (formats/trace/stream.py). glibc serves a block
that big from a mapping of its own, given back when it is freed, but raises that
threshold to the size of each such block freed (up to 32 MiB): from the second piece on,
the pieces came from the heap, where their freed pages sat below the columns growing
above them. :func:`map_large_blocks` fixes the threshold instead: the app reading a
299 MiB trace peaked at 284-320 MiB with it raised, 255-263 MiB with it fixed. Every
block so mapped is faulted in afresh, page by page: the stream now decodes pieces of 256
KiB where they lie in one buffer and reads the file 512 KiB at a time (below the
threshold), so the pieces no longer pay for it (a 1M-event trace's open: 562k page
faults, then 328k, then 165k).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes


M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
LARGE_BLOCK_BYTES = 1 << 20


@cache
def _libc() -> ctypes.CDLL | None:
    import ctypes  # here, not at start-up: 10 ms of the time to the first painted row

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return None


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    return getattr(_libc(), "malloc_trim", None)


def return_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc only)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def map_large_blocks() -> None:
    """Have blocks of :data:`LARGE_BLOCK_BYTES` and more mapped on their own and given
    back to the system as each is freed, for the rest of the process (glibc only; once)."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)
