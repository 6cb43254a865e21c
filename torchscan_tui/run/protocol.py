"""Messages on the worker channel: one JSON object per line (no torch, no textual).

The worker writes to an inherited pipe fd, never to stdout, so nothing the workload prints
can be taken for a message. Message types, in the order a worker sends them:

  {"type": "phase", "phase": "loading" | "profiling" | "aggregating" | "sending"}
  {"type": "phase", "phase": "profiling", "step": k, "steps": n}   after each step
  {"type": "meta", "context": {...}, "diagnostics": [...], "kernels": [...],
   "totals": {...}, "trace_path": ...}      kernels: the kernel view (device runs)
  {"type": "rows", "rows": [...]}                 rank order, in batches
  {"type": "phase", "phase": "tracing"}           with a trace to write, after the rows:
  {"type": "meta", ...}                           again, now with its trace_path
  {"type": "error", "kind": "load" | "workload" | "internal", "message": str,
   "traceback": str, "exit_code": int | None}     the one-line message first
  {"type": "done"}                                 nothing follows

A torchrun rank's worker writes to a file instead (``worker/rank.py``), its first line
``{"type": "rank", "rank": R, "local_rank": L}`` (torchrun's ``RANK`` and ``LOCAL_RANK``).

A channel that ends without ``done`` or ``error`` means the worker died or lost its fd:
the reader reports the run as incomplete, never as an empty success. The workload runs in
the worker's process and can write to the channel's fd: :func:`check_message` holds every
message to its type's fields before anything reads them, and a message that is not ours
fails the run, the rows received before it kept.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Iterator
from typing import Any, Literal, TypedDict

from torchscan_tui.analysis.records import KernelRow, Note, Row
from torchscan_tui.common.gcpause import GcBurst
from torchscan_tui.formats.report import finite
from torchscan_tui.formats.report_schema import accept_rows

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


ROW_BATCH = 1000  # rows per message on the channel (and per batch a reopened report sends)
PHASES = ("loading", "profiling", "aggregating", "sending", "tracing")


class _PhaseRequired(TypedDict):
    phase: Literal["loading", "profiling", "aggregating", "sending", "tracing"]


class _Phase(_PhaseRequired, total=False):
    step: int  # steps done so far, warm-up included (a step window's progress)
    steps: int  # of this many: warm-up + profiled


class _MetaRequired(TypedDict):
    context: dict[str, Any]
    diagnostics: list[Note]
    kernels: list[KernelRow]
    totals: dict[str, Any]
    trace_path: str | None


class _Meta(_MetaRequired, total=False):
    overview: dict[str, Any] | None  # the step overview (a step window's run)


class _Rank(TypedDict):
    rank: int
    local_rank: int


class _ErrorRequired(TypedDict):
    kind: str
    message: str


class _Error(_ErrorRequired, total=False):
    traceback: str
    exit_code: int | None


_SHAPES: dict[str, type] = {"phase": _Phase, "meta": _Meta, "error": _Error, "rank": _Rank}


def check_message(message: dict, rows_before: int = 0) -> dict:
    """``message`` if it has the fields its type needs, with their types; else ValueError
    saying which (``rows_before``: the rows already received, to number a bad row).

    For messages decoded without msgspec's typed decoder (which checks as it decodes)."""
    kind = message.get("type")
    if kind == "rows":
        accept_rows(message.get("rows"), offset=rows_before)
    elif kind in _SHAPES:
        if _msgspec is not None:
            try:
                _msgspec.convert({k: v for k, v in message.items() if k != "type"}, _SHAPES[kind])
            except _msgspec.ValidationError as exc:
                raise ValueError(f"the {kind} message: {exc}") from None
        elif not all(key in message for key in _SHAPES[kind].__required_keys__):
            raise ValueError(f"the {kind} message lacks a field")
    elif kind != "done":
        raise ValueError(f"a message of unknown type {kind!r}")
    return message


class NotAMessage(ValueError):
    """A JSON object with a ``type`` that is not a message the worker sends."""


if _msgspec is not None:
    # The messages as tagged structs: decoding checks every field's type at decode speed
    # (the same as decoding untyped), so a forged line is caught before anything reads it.
    def _tagged(name: str, fields: type | None) -> type:
        """A tagged struct of a TypedDict's fields (its optional ones default to None)."""
        annotations = {} if fields is None else fields.__annotations__
        optional = getattr(fields, "__optional_keys__", frozenset())
        return _msgspec.defstruct(
            f"_{name.title()}Message",
            [(key, kind, None) if key in optional else (key, kind)
             for key, kind in annotations.items()],
            tag=name, tag_field="type", gc=False,
        )  # fmt: skip

    _MESSAGE_TYPES = [
        _tagged("phase", _Phase),
        _tagged("meta", _Meta),
        _msgspec.defstruct(
            "_RowsMessage", [("rows", list[Row])], tag="rows", tag_field="type", gc=False
        ),
        _tagged("error", _Error),
        _tagged("done", None),
        _tagged("rank", _Rank),
    ]
    _DECODER = _msgspec.json.Decoder(_MESSAGE_TYPES[0] | _MESSAGE_TYPES[1] | _MESSAGE_TYPES[2]
                                     | _MESSAGE_TYPES[3] | _MESSAGE_TYPES[4]
                                     | _MESSAGE_TYPES[5])  # fmt: skip
    _as_dict = _msgspec.structs.asdict
    _ERROR_MESSAGE = _MESSAGE_TYPES[3]


def decode(line: bytes | memoryview) -> dict:
    """One message; ValueError for a line that is no JSON object with a ``type`` (noise,
    skipped), :class:`NotAMessage` for one whose fields are not those of its type."""
    if _msgspec is None:
        message = json.loads(bytes(line))
        if not isinstance(message, dict) or "type" not in message:
            raise ValueError("not a message")
        try:
            return check_message(message)
        except ValueError as exc:
            raise NotAMessage(str(exc)) from None
    try:
        message = _DECODER.decode(line)
    except _msgspec.ValidationError as exc:
        loose = _msgspec.json.decode(line)
        if isinstance(loose, dict) and "type" in loose:
            raise NotAMessage(f"the {loose['type']!r} message: {exc}") from None
        raise
    fields = _as_dict(message)
    if type(message) is _ERROR_MESSAGE:  # as sent: an optional field left out stays out
        fields = {key: value for key, value in fields.items() if value is not None}
    return {"type": message.__struct_config__.tag, **fields}


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
MAX_LINE = 64 << 20
"""The longest line a reader holds: a rows message is ~190 KiB, a meta with a big kernel
view a few MiB. A longer one is no message of the worker's (the workload wrote it)."""


def read_messages(fd: int, buffer_size: int = READ_BUFFER) -> Iterator[dict]:
    """Yield messages from ``fd`` until EOF, as dicts. A partial last line is discarded.

    Lines that are not JSON objects with a ``type`` are skipped: a message is all or
    nothing. One with a type but not its fields comes as ``{"type": "invalid", "problem":
    ...}``: the reader fails the run (the workload wrote to the channel). While
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
                if start == 0 and end > MAX_LINE:  # no message is this long: not ours
                    yield {"type": "invalid", "problem": f"a line over {MAX_LINE} bytes"}
                    return
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
                except NotAMessage as exc:
                    message = {"type": "invalid", "problem": str(exc)}
                except ValueError:
                    continue
                yield message
            if start == end:
                start = end = 0
    finally:
        burst.set(False)


def apply_meta(report: dict, message: dict) -> None:
    """A ``meta`` message into the report it describes (the session's, or a rank's)."""
    report["context"] = message["context"]
    report["diagnostics"] = message["diagnostics"]
    report["kernels"] = message.get("kernels") or []
    report["totals"].update(message.get("totals") or {})
    report["trace_path"] = message.get("trace_path")
    if message.get("overview") is not None:
        report["overview"] = message["overview"]
