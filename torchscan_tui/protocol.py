"""Messages on the worker channel: one JSON object per line (no torch, no textual).

The worker writes to an inherited pipe fd, never to stdout, so nothing the workload prints
can be taken for a message. Message types, in the order a worker sends them:

  {"type": "phase", "phase": "loading" | "profiling" | "aggregating" | "sending"}
  {"type": "meta", "context": {...}, "diagnostics": [...], "kernels": [...],
   "totals": {...}, "trace_path": ...}      kernels: the kernel view (device runs)
  {"type": "rows", "rows": [...]}                 rank order, in batches
  {"type": "phase", "phase": "tracing"}           with a trace to write, after the rows:
  {"type": "meta", ...}                           again, now with its trace_path
  {"type": "error", "kind": "load" | "workload" | "internal", "message": str,
   "traceback": str, "exit_code": int | None}     the one-line message first
  {"type": "done"}                                 nothing follows

A channel that ends without ``done`` or ``error`` means the worker died or lost its fd:
the reader reports the run as incomplete, never as an empty success.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Iterator

from .gcpause import GcBurst
from .report import finite

try:  # msgspec is several times faster for 100k rows; the stdlib is the fallback.
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _msgspec = None


def _plain(value: object) -> object:
    """A str subclass (such as TorchVersion) as text; anything else is a bug to surface."""
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"cannot send {type(value).__name__} on the channel")


_ENCODER = _msgspec.json.Encoder(enc_hook=_plain) if _msgspec is not None else None


def encode(message: dict) -> bytes:
    """One message as a line; NaN and infinities never travel (they become null)."""
    if _ENCODER is not None:
        return _ENCODER.encode(message) + b"\n"
    line = json.dumps(finite(message), separators=(",", ":"), allow_nan=False, default=_plain)
    return (line + "\n").encode()


def decode(line: bytes | memoryview) -> dict:
    if _msgspec is not None:
        return _msgspec.json.decode(line)
    return json.loads(bytes(line))


class ChannelWriter:
    """Writes whole messages to a file descriptor (the worker's end of the channel)."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, message: dict) -> None:
        data = memoryview(encode(message))
        while data:
            written = os.write(self.fd, data)
            data = data[written:]

    def close(self) -> None:
        os.close(self.fd)


READ_BUFFER = 1 << 20
"""Bytes read at a time: a batch of 1000 rows is ~190 KiB, so a read takes several."""


def read_messages(fd: int, buffer_size: int = READ_BUFFER) -> Iterator[dict]:
    """Yield messages from ``fd`` until EOF. A partial last line is discarded.

    Lines that are not valid JSON objects are skipped: a message is all or nothing. While
    data keeps arriving (a burst of row batches), the cyclic garbage collector is paused:
    100k decoded rows are some 600k small acyclic objects, and collector passes over the
    growing heap cost three times the decoding. It resumes before any read that would
    block, so it is never off while we wait.

    Reads go into one reused buffer and each line is decoded where it lies: splitting
    and copying the lines out cost 30-40 ms for 100k rows (a fresh ~190 KiB allocation
    per batch is page faults each time), a sixth of the decoding.
    """
    buffer = bytearray(buffer_size)
    view = memoryview(buffer)
    start = end = 0  # the unread bytes are buffer[start:end]
    burst = GcBurst(keep=True)  # messages are kept: the run's report is made of them
    try:
        while True:
            if not select.select([fd], [], [], 0)[0]:
                burst.set(False)  # about to block: never wait with the collector off
            if end == len(buffer):  # full: move the partial line to the front, or grow
                if start == 0:
                    view.release()
                    buffer += bytes(len(buffer))
                else:
                    view[: end - start] = bytes(view[start:end])
                    start, end = 0, end - start
                view = memoryview(buffer)
            count = os.readv(fd, [view[end:]])
            if not count:
                return
            burst.set(True)
            scan_from, end = end, end + count
            while (newline := buffer.find(b"\n", scan_from, end)) >= 0:
                line_start, start = start, newline + 1
                scan_from = start
                if newline == line_start:
                    continue
                try:  # the slice is gone once decoded: nothing pins the buffer
                    message = decode(view[line_start:newline])
                except ValueError:
                    continue
                if isinstance(message, dict) and "type" in message:
                    yield message
            if start == end:
                start = end = 0
    finally:
        burst.set(False)
