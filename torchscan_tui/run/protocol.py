"""Messages on the worker channel: one JSON object per line, each a typed struct (no torch,
no textual).

The worker writes to an inherited pipe fd, never to stdout, so nothing the workload prints
can be taken for a message. Messages, in the order a worker sends them:

  PhaseMessage("loading" | "profiling" | "collecting" | "aggregating" | "sending" |
  "tracing")
  PhaseMessage("profiling", step=k, steps=n)     after each step
  HeadMessage(head)                               the report but its rows (report_schema.Head)
  RowsMessage(rows)                               rank order, in batches
  PhaseMessage("tracing")                         with a trace to write, after the rows:
  HeadMessage(head)                               again, now with its trace_path
  ErrorMessage(kind, message, traceback, exit_code)   the one-line message first
  DoneMessage()                                   nothing follows

On the wire each is ``{"type": TAG, ...fields}``. A torchrun rank's worker writes to a
file instead (``worker/rank.py``), its first line a :class:`RankMessage` (torchrun's
``RANK`` and ``LOCAL_RANK``).

The head travels as one object, typed once (:class:`~torchscan_tui.formats.report_schema.Head`):
a new block of the report (the overview, say) is computed, typed there, and shown; no hop
between the worker and the screen names its fields.

A channel that ends without a done or an error means the worker died or lost its fd: the
reader reports the run as incomplete, never as an empty success. The workload runs in the
worker's process and can write to the channel's fd: each line is decoded straight into
its message's struct, every field checked at decode speed, and one that is not the
worker's comes out as :class:`InvalidMessage`, which fails the run, the rows received
before it kept.
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from typing import Any, cast

import msgspec

from torchscan_tui.common.gcpause import GcBurst
from torchscan_tui.formats.compact_records import as_plain, is_compact
from torchscan_tui.formats.report_schema import (
    Head,
    ReceivedRow,
    Report,
    check_head,
    share_common_values,
)
from torchscan_tui.run.phases import WorkerPhase

ROW_BATCH = 1000  # rows per message on the channel (and per batch a reopened report sends)


class _Message(msgspec.Struct, tag_field="type", gc=False, omit_defaults=True):
    """A channel message: its tag is the wire's ``type``."""


class PhaseMessage(_Message, tag="phase"):
    phase: WorkerPhase
    step: int | None = None  # steps done so far, warm-up included (a step window's progress)
    steps: int | None = None  # of this many: warm-up + profiled (0: not known in advance)


class HeadMessage(_Message, tag="meta"):
    """The report's fields but its rows: decoded as sent, then checked against
    :class:`~torchscan_tui.formats.report_schema.Head` (a field it does not name is kept,
    not dropped: decoding straight into the TypedDict would drop it)."""

    head: dict[str, Any]

    @classmethod
    def of(cls, head: Head) -> HeadMessage:
        """The message that carries ``head``, as the worker sends it."""
        return cls(dict(head))

    @property
    def typed(self) -> Head:
        return cast(Head, self.head)


class RowsMessage(_Message, tag="rows"):
    """Rows in rank order: decoded as :data:`~torchscan_tui.formats.report_schema.ReceivedRow`
    (their call sites and spreads straight into compact records), written as any row."""

    rows: list[ReceivedRow]


class ErrorMessage(_Message, tag="error"):
    kind: str  # "load", "workload", "internal"
    message: str
    traceback: str = ""
    exit_code: int | None = None


class DoneMessage(_Message, tag="done"):
    pass


class RankMessage(_Message, tag="rank"):
    rank: int
    local_rank: int
    node: str = ""  # the session's own name for its node (run/rank_files.NODE_VARIABLE)
    host: str = ""  # the node's host name, to label the rank with


Message = PhaseMessage | HeadMessage | RowsMessage | ErrorMessage | DoneMessage | RankMessage


class InvalidMessage(msgspec.Struct, frozen=True):
    """What a reader makes of a line that is not the worker's (never sent): ``problem``
    says what was wrong with it."""

    problem: str


Read = Message | InvalidMessage


def _plain(value: object) -> object:
    """A str subclass (such as TorchVersion) as text, a row's compact spread as its dict
    (formats/compact_records.py; its compact call sites are structs msgspec writes
    itself); anything else is a bug to surface."""
    if isinstance(value, str):
        return str(value)
    if is_compact(value):
        return as_plain(value)
    raise TypeError(f"cannot send {type(value).__name__} on the channel")


_ENCODER = msgspec.json.Encoder(enc_hook=_plain)
_DECODER = msgspec.json.Decoder(Message)


def encode(message: Message) -> bytes:
    """One message as a line; NaN and infinities never travel (they become null). Text
    that is not Unicode (a file name's undecodable bytes, kept by Python as lone
    surrogates: a traceback through ``caf\\xe9.py``) travels escaped, ``\\udce9``."""
    try:
        return _ENCODER.encode(message) + b"\n"
    except UnicodeEncodeError:
        escaped = _escaped(msgspec.to_builtins(message, enc_hook=_plain))
        return _ENCODER.encode(escaped) + b"\n"


def _escaped(value: object) -> object:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    return value


class NotAMessage(ValueError):
    """A JSON object with a ``type`` whose fields are not those of a message the worker
    sends."""


def decode(line: bytes | memoryview) -> Message:
    """One message; ValueError for a line that is no JSON object with a ``type`` (noise,
    skipped), :class:`NotAMessage` for one whose fields are not those of its type. Rows
    share their common values as they arrive (``share_common_values``)."""
    try:
        message = _DECODER.decode(line)
    except msgspec.ValidationError as exc:
        loose = msgspec.json.decode(line)
        if isinstance(loose, dict) and "type" in loose:
            raise NotAMessage(f"the {loose['type']!r} message: {exc}") from None
        raise ValueError("not a message") from None
    if type(message) is RowsMessage:
        share_common_values(message.rows)
    elif type(message) is HeadMessage:
        try:
            check_head(message.head)
        except ValueError as exc:
            raise NotAMessage(f"the 'meta' message: {exc}") from None
    return message


class ChannelWriter:
    """Writes whole messages to a file descriptor (the worker's end of the channel)."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, message: Message) -> None:
        data = memoryview(encode(message))
        while data:
            written = os.write(self.fd, data)
            data = data[written:]

    def close(self) -> None:
        os.close(self.fd)


READ_BUFFER = 1 << 20
"""Bytes read at a time: a batch of 1000 rows is ~190 KiB, so a read takes several."""
MAX_LINE = 64 << 20
"""The longest line a reader holds: a rows message is ~190 KiB, a head with a big kernel
view a few MiB. A longer one is no message of the worker's (the workload wrote it)."""


def read_messages(fd: int, buffer_size: int = READ_BUFFER) -> Iterator[Read]:
    """Yield messages from ``fd`` until EOF. A partial last line is discarded.

    Lines that are not JSON objects with a ``type`` are skipped: a message is all or
    nothing. One with a type but not its fields comes as :class:`InvalidMessage`: the
    reader fails the run (the workload wrote to the channel). While data keeps arriving
    (a burst of row batches), the cyclic garbage collector is paused: 100k decoded rows
    are some 600k small acyclic objects, and collector passes over the growing heap cost
    three times the decoding. It resumes before any read that would block, so it is
    never off while we wait.

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
                    yield InvalidMessage(f"a line over {MAX_LINE} bytes")
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
                read = decode_line(view[line_start:newline])
                if read is not None:
                    yield read
            if start == end:
                start = end = 0
    finally:
        burst.set(False)


def decode_line(line: bytes | memoryview) -> Read | None:
    """A line as a reader takes it: its message, :class:`InvalidMessage` for one that is
    not the worker's, None for noise (not a JSON object with a ``type``)."""
    try:  # the slice is gone once decoded: nothing pins the buffer
        return decode(line)
    except NotAMessage as exc:
        return InvalidMessage(str(exc))
    except ValueError:
        return None


def apply_head(report: Report, head: Head) -> None:
    """A head into the report it describes (the session's, or a rank's): every block it
    holds replaces the report's, the totals add to what the session measured."""
    for key, value in head.items():
        if key == "totals":
            report["totals"] = {**(report.get("totals") or {}), **(head["totals"] or {})}
        else:
            report[key] = value  # type: ignore[literal-required]
