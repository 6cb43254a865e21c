"""Read JSON files (``.gz`` too) fast and with progress; no torch, no textual.

msgspec parses several times faster than the stdlib; the stdlib reads what msgspec
refuses and JSON allows as Python writes it (``NaN``, lone surrogate escapes).
"""

from __future__ import annotations

import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Generator, Iterator

import msgspec

from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.formats.atomic import special_file_kind

Progress = Callable[[str, float], None]
"""``progress(stage, fraction)``: stage is "reading", "parsing" (a file decoded once read) or
"grouping" (a trace's events into rows), fraction 0..1."""

READ_CHUNK = 4 << 20
# What a reader that decodes as it goes is handed at a time (file_chunks): below the
# size glibc maps on its own once a trace is streamed (common/memory.py), so each piece
# read reuses the heap's pages instead of faulting in fresh ones (a 297 MiB trace: ~76k
# page faults fewer).
STREAM_CHUNK = 512 << 10
# A .gz streamed is read 64 KiB at a time: what zlib has not inflated yet is copied at
# each step of STREAM_CHUNK, so a big read would be copied over and over.
STREAM_INFLATE_READ = 64 << 10
GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib reads the gzip format
# Plain files up to this size are read in one call: half the time of chunks joined (one
# allocation, no copy; 30 vs 70 ms for 37 MiB here) and quick enough not to need progress.
WHOLE_READ_LIMIT = 256 << 20


# A trace's JSON compresses 5-20x; a file that inflates past this many times its size, and
# past MIN_INFLATE_LIMIT, is a decompression bomb or no trace (override: the variable).
INFLATE_RATIO_LIMIT = 100
MIN_INFLATE_LIMIT = 1 << 30
INFLATE_LIMIT_VARIABLE = "TORCHSCAN_MAX_DECOMPRESSED"
INFLATE_STEP = 16 << 20  # output per zlib call: a chunk of zeros inflates a thousandfold


# Decoded JSON costs ~100-300 bytes an object however small its text: 150 MB of "{}," is
# 50 million objects and 5 GB. A file of more objects than this is refused before it is
# decoded (override: the variable). A trace holds about two an event (the event, its
# args): the default is ten million events, past anything else this reads at once.
MAX_OBJECTS = 20_000_000
MAX_OBJECTS_VARIABLE = "TORCHSCAN_MAX_JSON_OBJECTS"


class TooManyObjects(ValueError):
    """JSON of more objects than :func:`max_objects` allows: memory would follow them."""


def max_objects() -> int:
    try:
        return max(int(os.environ[MAX_OBJECTS_VARIABLE]), 1)
    except (KeyError, ValueError):
        return MAX_OBJECTS


def check_object_count(data: bytes, counted: int = 0) -> int:
    """TooManyObjects when ``data`` opens more JSON objects than allowed: counted as its
    ``{`` bytes (braces in strings count too: an overcount, never an undercount), at
    memory speed, before anything is decoded. ``counted``: the objects of the file's
    parts read before this one; returns the count with this part's."""
    limit = max_objects()
    count = counted + data.count(b"{")
    if count > limit:
        raise TooManyObjects(
            f"it holds some {count:,} JSON objects, over the {limit:,} read at once (a "
            "trace has about two an event): a decompression bomb, or no profile; "
            f"{MAX_OBJECTS_VARIABLE}=N raises the limit"
        )
    return count


def no_progress(stage: str, fraction: float) -> None:
    """The default progress callback: report nothing."""


class NotARegularFile(OSError):
    """A FIFO, device or socket where a file was expected: reading it could block forever
    or never end (``/dev/zero``)."""


class TooLargeWhenInflated(ValueError):
    """A ``.gz`` that inflates past :func:`inflate_limit`."""


def inflate_limit(compressed: int) -> int:
    """The most a ``.gz`` of ``compressed`` bytes may inflate to (see the constants)."""
    try:
        return int(os.environ[INFLATE_LIMIT_VARIABLE])
    except (KeyError, ValueError):
        return max(INFLATE_RATIO_LIMIT * compressed, MIN_INFLATE_LIMIT)


def open_regular(path: str):
    """``path`` opened for reading if it is a regular file (a FIFO is opened without
    blocking, to be refused); else NotARegularFile saying what it is."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        kind = special_file_kind(mode) or "not a regular file"
        raise NotARegularFile(f"it is {kind}, not a regular file")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def read_bytes(path: str, progress: Progress = no_progress) -> bytes:
    """The file's (decompressed, for ``.gz``) bytes; a big or compressed file is read in
    chunks, reporting the fraction done.

    A ``.gz`` cut short gives what it held up to the cut (EOFError if not a byte): the
    JSON reader judges that, as it does a plain file cut short. Not a gzip file, or one
    damaged inside: zlib.error; one that inflates too far: TooLargeWhenInflated. Only
    regular files are read (NotARegularFile).
    """
    with open_regular(path) as raw:
        total = max(os.fstat(raw.fileno()).st_size, 1)
        if not path.endswith(".gz") and total <= WHOLE_READ_LIMIT:
            data = raw.read()
            progress("reading", 1.0)
            return data
        return b"".join(_chunks(raw, path, total, progress))


def file_chunks(path: str, progress: Progress = no_progress) -> Generator[bytes, None, None]:
    """The file's (decompressed, for ``.gz``) bytes in pieces of 512 KiB (a few MiB
    inflated), as :func:`read_bytes` reads them (the same checks and errors), never the
    whole file at once: what a reader that decodes as it goes consumes."""
    with open_regular(path) as raw:
        yield from opened_file_chunks(raw, path, progress)


def opened_file_chunks(
    raw, path: str, progress: Progress = no_progress
) -> Generator[bytes, None, None]:
    """:func:`file_chunks` of ``path`` already open as ``raw`` (by :func:`open_regular`;
    the caller closes it): a reader that also reads the same file at its own offsets
    (``pread``: formats/trace/halves.py) reads the file this open found, not whatever
    the name holds by then."""
    total = max(os.fstat(raw.fileno()).st_size, 1)
    yield from _chunks(raw, path, total, progress, STREAM_CHUNK, STREAM_INFLATE_READ)


class _AtOffsets:
    """A file read from its start at offsets (``pread``), as a file object's ``read`` and
    ``tell``: a forked child reading the same descriptor never moves its shared position."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor, self._offset = descriptor, 0

    def read(self, size: int) -> bytes:
        chunk = os.pread(self._descriptor, size, self._offset)
        self._offset += len(chunk)
        return chunk

    def tell(self) -> int:
        return self._offset


def inflated_at_offsets(descriptor: int, progress: Progress = no_progress) -> Iterator[bytes]:
    """The open ``.gz`` file's inflated bytes from its start, in the pieces and with the
    checks and errors of :func:`opened_file_chunks`, its compressed bytes read at
    offsets: two processes may each inflate it from one open (formats/trace/halves.py)."""
    total = max(os.fstat(descriptor).st_size, 1)
    return _inflate(_AtOffsets(descriptor), total, progress, STREAM_CHUNK, STREAM_INFLATE_READ)


def inflated_size(descriptor: int) -> int | None:
    """What the open ``.gz`` file says it inflates to (its trailer's ISIZE: the last
    member's size, modulo 4 GiB): an estimate to plan by, never trusted as the size.
    None for a file too short to have a trailer."""
    size = os.fstat(descriptor).st_size
    if size < 18:  # a gzip header (10 bytes) and its trailer (8)
        return None
    return int.from_bytes(os.pread(descriptor, 4, size - 4), "little")


def _chunks(
    raw,
    path: str,
    total: int,
    progress: Progress,
    size: int | None = None,
    compressed_size: int | None = None,
) -> Iterator[bytes]:
    """The file's bytes ``size`` at a time (a .gz inflated at most ``size`` per step from
    reads of ``compressed_size``). By default: :data:`READ_CHUNK` (a .gz: steps of
    :data:`INFLATE_STEP` from reads of :data:`READ_CHUNK`)."""
    if not path.endswith(".gz"):
        while chunk := raw.read(size or READ_CHUNK):
            yield chunk
            progress("reading", min(raw.tell() / total, 1.0))
        return
    yield from _inflate(raw, total, progress, size or INFLATE_STEP, compressed_size or READ_CHUNK)


def _inflate(
    raw, total: int, progress: Progress, step: int, compressed_size: int
) -> Iterator[bytes]:
    """A gzip file's members inflated, at most ``step`` per call so a bomb is stopped at
    the limit, not after. A file cut short ends where its data does (EOFError if not a
    byte of it came out; an empty file is just empty)."""
    size, limit = 0, inflate_limit(total)
    inflater, ended = zlib.decompressobj(wbits=GZIP_WBITS), True
    while compressed := raw.read(compressed_size):
        while compressed:  # a file of several gzip members holds them one after another
            piece = inflater.decompress(compressed, step)
            size += len(piece)
            if size > limit:
                raise TooLargeWhenInflated(
                    f"it inflates past {limit / 2**30:.1f} GiB, over {INFLATE_RATIO_LIMIT}x "
                    "its size (traces compress 5-20x): a decompression bomb, or no trace; "
                    f"{INFLATE_LIMIT_VARIABLE}=BYTES raises the limit"
                )
            if piece:
                yield piece
            ended = inflater.eof
            if ended:
                compressed = inflater.unused_data
                inflater = zlib.decompressobj(wbits=GZIP_WBITS)
            else:
                compressed = inflater.unconsumed_tail
        progress("reading", min(raw.tell() / total, 1.0))
    if not ended and not size:
        raise EOFError("the gzip file ends before any of its data")


_UTF8_BOM = b"\xef\xbb\xbf"


def as_utf8(data: bytes) -> bytes:
    """JSON bytes as UTF-8, as ``json.loads`` reads them: a UTF-8 byte order mark dropped,
    UTF-16 and UTF-32 re-encoded."""
    if data.startswith(_UTF8_BOM):
        return data[len(_UTF8_BOM) :]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) > 1 and 0 in data[:2]):
        return data.decode(json.detect_encoding(data)).encode("utf-8")
    return data


def utf8_replaced(data: bytes | bytearray | memoryview) -> bytes | None:
    """``data`` with each byte that is not UTF-8 made U+FFFD (its three bytes); None
    where all of it is UTF-8.

    torch 2.13 writes a trace now and then with such bytes in a name (its Python
    tracer's frames of its own threads, ``with_stack``), which the stdlib's JSON refuses
    whole; the rest of such a trace is read as it is, the name shown with U+FFFD where
    a byte was no text. Readers ask only once a decode failed on UTF-8
    (:func:`failed_on_utf8`): a binary file is never copied."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace").encode("utf-8")
    return None


def failed_on_utf8(error: Exception) -> bool:
    """Whether a JSON decode failed on bytes that are not UTF-8 (the stdlib's error, or
    msgspec's "Invalid UTF-8 encoded string"), not on the JSON before them."""
    return isinstance(error, UnicodeDecodeError) or "UTF-8" in str(error)


# What the stdlib reads and msgspec refuses: lone surrogate escapes, NaN and Infinity.
_STDLIB_ONLY = (b"\\ud", b"\\uD", b"NaN", b"Infinity")
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def stdlib_reads_more(data: bytes) -> bool:
    """Whether ``json.loads`` may read what msgspec refused (see :func:`decode_json`)."""
    return any(token in data for token in _STDLIB_ONLY)


def decode_json(data: bytes) -> object:
    """Any JSON document ``json.loads`` reads; ValueError (or a subclass) for text that is
    not JSON. A lone surrogate escape (no character) becomes U+FFFD, so no string holds
    one: the terminal and UTF-8 files could not take it."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        if not stdlib_reads_more(data):
            raise
    return json.loads(_LONE_SURROGATE.sub(rb"\\ufffd", data))


def is_json(data: bytes) -> bool:
    """Whether ``data`` is a JSON document the stdlib would read, without building it.

    msgspec checks the syntax while skipping every value (0.07 s for a 37 MiB trace,
    where ``json.loads`` builds it all: 1-4 s); the bytes must also be UTF-8. What
    msgspec refuses and the stdlib accepts (``NaN``, lone surrogate escapes) goes to
    the stdlib for the verdict, so the answer is always the stdlib's.
    """
    try:
        data.decode("utf-8")
        msgspec.json.decode(data, type=msgspec.Raw)
        return True
    except (ValueError, msgspec.DecodeError):
        pass
    with gc_paused():
        try:
            json.loads(data)
        except ValueError:
            return False
    return True
