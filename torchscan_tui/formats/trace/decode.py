"""Read a Chrome/Kineto trace file into just the fields grouping needs, fast.

A 100k-event trace is ~40 MiB of JSON of which grouping needs a tenth: phase, category,
name, thread, start, duration and a few ``args``. msgspec decodes the file
straight into typed structs that skip every other field without building it, and keep
``Input Dims`` as undecoded JSON bytes: equal shapes are equal bytes, so grouping keys on
them and only one list per group is ever built: 0.1-0.2 s for a 40 MiB trace where
json.load takes 1-3 s here.
For a file whose events are not all JSON objects (msgspec's typed decoder refuses it),
the generic parser fills the same structures.

Reading reports its progress (``progress(stage, fraction)``) so a caller can show it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

import msgspec

from torchscan_tui.formats import jsonio
from torchscan_tui.formats.jsonio import Progress, decode_json, no_progress

# (attribute, key in the trace, default): the fields grouping reads, listed once for
# both decoders. "Input Dims" is apart: kept as undecoded JSON bytes.
EVENT_FIELDS = (
    ("ph", "ph", None), ("cat", "cat", None), ("name", "name", ""),
    ("tid", "tid", 0), ("ts", "ts", 0), ("dur", "dur", 0),
)  # fmt: skip
ARGS_FIELDS = (
    ("external_id", "External id", 0), ("correlation", "correlation", None),
    ("device_type", "Device Type", 0), ("nbytes", "Bytes", 0),
    ("legacy_external_id", "external id", 0), ("stream", "stream", None),
    ("call_stack", "Call stack", None),  # with_stack, traces before Kineto's python events
    ("addr", "Addr", 0), ("total_allocated", "Total Allocated", None),  # [memory]
    ("device_id", "Device Id", 0),
    # autograd's: a backward op's sequence number is its forward op's (call sites)
    ("sequence", "Sequence number", -1), ("forward_thread", "Fwd thread id", 0),
)  # fmt: skip


@dataclass
class DecodedTrace:
    """A trace file's events and the header fields we show.

    Each event has the attributes of ``EVENT_FIELDS`` and ``args`` (None, or an object
    with those of ``ARGS_FIELDS`` and ``input_dims``, the JSON bytes of "Input Dims").
    """

    events: list
    record_shapes: object = None
    host_name: object = None
    distributed: object = None  # distributedInfo: rank, world_size, backend (a rank's trace)


def _args_from_dict(args: object) -> SimpleNamespace | None:
    if not isinstance(args, dict):
        return None
    dims = args.get("Input Dims")
    return SimpleNamespace(
        input_dims=None if dims is None else json.dumps(dims, default=float).encode(),
        **{attribute: args.get(key, default) for attribute, key, default in ARGS_FIELDS},
    )


def events_from_dicts(entries: list) -> list[SimpleNamespace]:
    """Trace events from generically parsed JSON; entries that are not objects are skipped."""
    return [
        SimpleNamespace(
            args=_args_from_dict(entry.get("args")),
            **{attribute: entry.get(key, default) for attribute, key, default in EVENT_FIELDS},
        )
        for entry in entries
        if isinstance(entry, dict)
    ]


def _struct_fields(fields: tuple) -> list[tuple]:
    return [
        (attribute, Any, msgspec.field(default=default, name=key))
        for attribute, key, default in fields
    ]


# gc=False: these never hold cycles, so the collector need not track 100k of them.
# Raw cannot be part of a union: an empty Raw stands for "no Input Dims".
_dims = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
_Args = msgspec.defstruct(
    "_Args", [*_struct_fields(ARGS_FIELDS), ("input_dims", msgspec.Raw, _dims)], gc=False
)
_Event = msgspec.defstruct(
    "_Event",
    [*_struct_fields(EVENT_FIELDS), ("args", _Args | None, None)],
    gc=False,
)


class _Trace(msgspec.Struct):
    traceEvents: list[_Event] | None = None  # type: ignore[valid-type]  # noqa: N815
    record_shapes: Any = None
    host_name: Any = None
    distributedInfo: Any = None  # noqa: N815


# Below 10**12 us (< 2**42: see event_fields.FAST_EXACT_LIMIT_US) a float of a time
# written to the nanosecond gives that nanosecond back: a duration, or a time from the
# trace's start.
FLOAT_HOLDS_WHOLE_DIGITS = 12


def exact_number(text: str) -> int | float | Decimal:
    """A number written with a fraction or exponent, exactly: an int where the fraction is
    zeros (``1661203467502638.0``); a float where one holds it to the nanosecond (under
    10**12 with at most three decimals: an epoch-time trace's durations, ``12.345``; a
    Decimal each made reading such a trace ~10% slower); else a Decimal made from its
    text (an epoch time's ``1693439063488263.215``)."""
    if text[-2:] == ".0" and text[:-2].isdigit():  # a whole number: ~2x faster this way
        return int(text[:-2])
    whole, dot, fraction = text.partition(".")
    digits = whole.lstrip("-")
    if dot and digits.isdigit() and fraction.isdigit():
        if not fraction.strip("0"):
            return int(whole)
        if len(fraction) <= 3 and len(digits) <= FLOAT_HOLDS_WHOLE_DIGITS:
            return float(text)
    return Decimal(text)


_TRACE_DECODER = msgspec.json.Decoder(_Trace)
# Every number with a fraction read exactly from its text: exact times.
_EXACT_TRACE_DECODER = msgspec.json.Decoder(_Trace, float_hook=exact_number)


_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])  # type: ignore[valid-type]
_EXACT_EVENTS_DECODER = msgspec.json.Decoder(list[_Event], float_hook=exact_number)  # type: ignore[valid-type]


class EventDecoder:
    """Decodes the pieces of one trace's event array (JSON arrays of events) as the typed
    events :func:`decode_trace` gives, times exact as there.

    A piece whose float times cannot hold their nanoseconds is decoded again reading
    every number with a fraction from its text; one trace's times are alike, so once a
    piece needed that, the pieces after it are read so straight away (a piece read either
    way gives the same nanoseconds). Raises msgspec's DecodeError or ValidationError where
    a piece is not such an array.
    """

    def __init__(self) -> None:
        self.exact = False

    def decode(self, array: bytes | memoryview) -> list:
        if self.exact:
            return _EXACT_EVENTS_DECODER.decode(array)
        events = _EVENTS_DECODER.decode(array)
        if _loses_digits(events):
            self.exact = True
            events = _EXACT_EVENTS_DECODER.decode(array)
        return events


def decode_header(document: bytes) -> DecodedTrace | None:
    """A trace file's fields but its events (``document``: the file with an empty event
    array); None when it is not a trace whose events were that array."""
    try:
        trace = _TRACE_DECODER.decode(document)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if trace.traceEvents != []:
        return None
    return DecodedTrace([], trace.record_shapes, trace.host_name, trace.distributedInfo)


def _typed(data: bytes, exact: bool = False) -> DecodedTrace | None:
    """Decode with msgspec's typed structs; None when the file does not fit them."""
    try:
        trace = (_EXACT_TRACE_DECODER if exact else _TRACE_DECODER).decode(data)
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError:
        if jsonio.stdlib_reads_more(data):  # a lone surrogate, NaN: the stdlib reads it
            return None
        raise
    if trace.traceEvents is None:
        return None
    return DecodedTrace(
        trace.traceEvents, trace.record_shapes, trace.host_name, trace.distributedInfo
    )


# Below 2**43 us (101 days) a float's ulp is at most 2**-10 us (0.98 ns), so a time
# written to the nanosecond is recovered exactly by rounding; above it (an epoch in us
# written with decimals) digits are lost in the float, and the text is read instead.
EXACT_FLOAT_LIMIT_US = 2**43


def _loses_digits(events: list) -> bool:
    """Whether a float start time is too large for a float to hold its nanoseconds."""
    times = list(map(attrgetter("ts"), events))
    try:
        large = max(times, default=0) >= EXACT_FLOAT_LIMIT_US
        large = large or min(times, default=0) <= -EXACT_FLOAT_LIMIT_US
    except TypeError:  # a time that is not a number: the importer names the damage
        return False
    return large and float in set(map(type, times))


def _from_document(document: object) -> DecodedTrace | object:
    if isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        return DecodedTrace(
            events_from_dicts(document["traceEvents"]),
            document.get("record_shapes"),
            document.get("host_name"),
            document.get("distributedInfo"),
        )
    return document


def decode_trace(data: bytes, progress: Progress = no_progress) -> DecodedTrace | object:
    """The trace in ``data``, or the generically decoded JSON when it is not a trace.

    Times are kept as written: integers as ints, and where a float could not hold a
    time's nanoseconds, every number with a fraction as a ``Decimal`` read from its text
    (a second, slower decode, but exact). A byte that is not UTF-8 (torch writes some
    now and then: :func:`~torchscan_tui.formats.jsonio.utf8_replaced`) is read as U+FFFD.
    Raises ValueError for text that is not JSON at all.
    """
    try:
        return _decoded_trace(data, progress)
    except ValueError as exc:
        repaired = jsonio.utf8_replaced(data) if jsonio.failed_on_utf8(exc) else None
        if repaired is None:
            raise
    return _decoded_trace(repaired, progress)


def _decoded_trace(data: bytes, progress: Progress) -> DecodedTrace | object:
    progress("parsing", 0.0)
    decoded: DecodedTrace | object = _typed(data)
    if decoded is None:
        decoded = _from_document(decode_json(data))
    if isinstance(decoded, DecodedTrace) and _loses_digits(decoded.events):
        exact = _typed(data, exact=True)
        decoded = exact or _from_document(json.loads(data, parse_float=exact_number))
    progress("parsing", 1.0)
    return decoded
