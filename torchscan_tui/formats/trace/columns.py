"""A trace's decoded events as the columns grouping reads (no torch).

Complete (``"X"``) events become columns, one comprehension or ``map`` per field: this
runs over every event of the trace, so no per-event tuple or object is kept. ``Input
Dims`` stay JSON bytes (grouping keys on them as they are); times become integer
nanoseconds (:func:`nanoseconds`). Events arrive in batches
(:mod:`~torchscan_tui.formats.trace.stream` decodes a big file a piece at a time): each
batch is read into the columns and let go, and repeated strings (names, call stacks,
shapes) are kept once, so the columns cost a fraction of the events they came from.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, MutableSequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import repeat
from operator import add, attrgetter, sub
from typing import Any

from torchscan_tui.analysis.activities import (
    CPU_OP,
    DEVICE_ANNOTATION,
    DEVICE_WAIT,
    DEVICE_WORK,
    RUNTIME,
    UNKNOWN,
    activity_class,
    canonical_category,
)
from torchscan_tui.analysis.profiler_events import (
    DEVICE_WAIT_ACTIVITY,
    FILTERED_NAMES,
    MEMORY_EVENT_NAME,
    DeviceWait,
    EventColumns,
    PythonFrames,
    RawEvent,
)
from torchscan_tui.analysis.sites import (
    FROM_CALL_STACK,
    FROM_PYTHON_EVENTS,
    call_sites,
    nested_sites,
    python_function_site,
)
from torchscan_tui.formats.report import ReportError

KEPT_CLASSES = frozenset({CPU_OP, RUNTIME, DEVICE_WORK, DEVICE_ANNOTATION})
ON_DEVICE = frozenset({DEVICE_WORK, DEVICE_ANNOTATION})
TIME_LIMIT_NS = 2**63  # no clock a profiler reads goes past it (292 years)
FAST_EXACT_LIMIT_US = 2**42  # below it, round(us * 1000.0) is the exact nanosecond
NO_SHAPES = b"[]"
SHAPE_PROBE = 5000  # the first events looked at for Input Dims (was it recorded?)
PYTHON_FUNCTION = "python_function"
_NAME, _CATEGORY, _TS, _DURATION, _ARGS, _THREAD = map(
    attrgetter, ("name", "cat", "ts", "dur", "args", "tid")
)


def _thread(value: object) -> int:
    """A thread id as a number: a whole number written ``7.0`` is thread 7 however it was
    decoded (float, or int or Decimal read exactly); a name's digits, or its hash."""
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else hash(value) & 0xFFFFFFFF


def nanoseconds(microseconds: list) -> list[int]:
    """Trace times (microseconds) as exact integer nanoseconds.

    ``ts * 1000.0`` in floats is off by up to ~128 ns at today's epoch values (past
    2**53), enough to make touching events overlap. Integers are multiplied as integers,
    Decimals (read from the text, see ``trace_decode.EXACT_FLOAT_LIMIT_US``) likewise.
    Floats: below :data:`FAST_EXACT_LIMIT_US` the product rounds to the exact nanosecond;
    above it each time's offset from the earliest (exact in floats while all lie within a
    factor 2) is scaled instead; else whole microseconds and fraction are split. Each path
    is exact to the nanosecond for times written to three decimals, and takes only C
    calls per value.
    """
    kinds = set(map(type, microseconds))
    if kinds <= {int}:
        return list(map((1000).__mul__, microseconds))
    if Decimal in kinds:
        return [round(value * 1000) for value in microseconds]
    top, bottom = max(microseconds, default=0), min(microseconds, default=0)
    if bottom >= 0 and top < FAST_EXACT_LIMIT_US:
        # Both the float's own error and the product's rounding stay under 0.25 ns here.
        return list(map(round, map((1000.0).__mul__, microseconds)))
    base = math.floor(bottom)
    if 0 < base and top <= 2 * base:
        # One trace's times lie within a factor 2 of each other, so each one's offset
        # from the earliest is exact in floats (Sterbenz) and small enough to scale.
        offsets = map(round, map((1000.0).__mul__, map(sub, microseconds, repeat(base))))
        return list(map((base * 1000).__add__, offsets))
    wholes = list(map(math.floor, microseconds))
    fractions = map(round, map((1000.0).__mul__, map(sub, microseconds, wholes)))
    return list(map(add, map((1000).__mul__, wholes), fractions))


def _thread_numbers(tids: list, kept: dict[int, int]) -> list[int]:
    """Each event's thread as a number (:func:`_thread`), worked out once per distinct id
    (a trace names a handful; a 2021 trace writes most as strings) and each number kept
    as one int object (``kept``: those of the events read before)."""
    try:
        numbers = {
            tid: kept.setdefault(number, number)
            for tid in set(tids)
            for number in (tid if type(tid) is int else _thread(tid),)
        }
    except TypeError:  # an id that is a list or an object: each on its own
        return [tid if type(tid) is int else _thread(tid) for tid in tids]
    return list(map(numbers.__getitem__, tids))


def _memory_instants(trace_events: list, threads: dict[int, int]) -> tuple[list[RawEvent], list]:
    """The ``[memory]`` instants (allocations and frees) of decoded trace events, and
    each one's ``args`` (what the allocations read: address, bytes, total, device)."""
    instants = [
        entry for entry in trace_events if entry.ph == "i" and entry.name == MEMORY_EVENT_NAME
    ]
    args = list(map(_ARGS, instants))
    times = nanoseconds(list(map(_TS, instants)))
    events = list(
        map(
            RawEvent._make,
            zip(
                repeat(MEMORY_EVENT_NAME),
                ["CPU" if a is None or a.device_type == 0 else "CUDA" for a in args],
                repeat(False),
                _thread_numbers(list(map(_THREAD, instants)), threads),
                times,
                times,
                repeat(0),
                repeat(0),
                repeat([]),  # never read: memory instants are not grouped by shape
                repeat(False),
                repeat(""),
                [0 if a is None else int(a.nbytes or 0) for a in args],
                repeat(False),
                repeat(0),  # no FLOPs: a trace does not carry them
            ),
        )
    )
    return events, args


def _stream_number(value: object) -> int:
    """A device event's ``stream`` as HTA reads it: the number, or -1 where it is none."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return -1


def _device_waits(trace_events: list) -> list[DeviceWait]:
    """The synchronisations drawn on a device stream (``cuda_sync`` with a ``stream``):
    busy time of the device timeline as HTA counts it, never an operator's device time."""
    waits = [
        entry
        for entry in trace_events
        if entry.ph == "X"
        and entry.cat == DEVICE_WAIT_ACTIVITY
        and entry.args is not None
        and _stream_number(entry.args.stream) != -1
    ]
    starts = nanoseconds(list(map(_TS, waits)))
    ends = list(map(add, starts, nanoseconds(list(map(_DURATION, waits)))))
    return [
        DeviceWait(str(entry.name), start, end, _stream_number(entry.args.correlation))
        for entry, start, end in zip(waits, starts, ends, strict=True)
    ]


def _placed(trace_events: list) -> tuple[list, list[str], list[str], Counter, set]:
    """The complete events grouping reads, their canonical categories and activity
    classes, how many events of each category it set apart (waits and categories it
    cannot place: named in a diagnostic, never turned into CPU time), and every category
    present (as the trace spells it).

    One pass in Python over the events (the filter); the rest are C-level maps.
    """
    present = set(map(_CATEGORY, trace_events))
    canonical = {
        category: canonical_category(category if type(category) is str else str(category or ""))
        for category in present
    }
    classes = {category: activity_class(name) for category, name in canonical.items()}
    left_out = {category for category, cls in classes.items() if cls not in KEPT_CLASSES}
    complete = [entry for entry in trace_events if entry.ph == "X" and entry.cat not in left_out]
    named = {category for category in left_out if classes[category] in (UNKNOWN, DEVICE_WAIT)}
    set_apart: Counter[str] = Counter()
    if named:
        set_apart = Counter(
            canonical[entry.cat] for entry in trace_events if entry.ph == "X" and entry.cat in named
        )
    raw = list(map(_CATEGORY, complete))
    return (
        complete,
        list(map(canonical.__getitem__, raw)),
        list(map(classes.__getitem__, raw)),
        set_apart,
        present,
    )


def framed_sites(
    frames: PythonFrames, ranges: list[str | None], columns: EventColumns
) -> list[str | None]:
    """Each complete event's innermost frame range of ``ranges`` (one per frame) around
    it; a backward op's, its forward op's (analysis/sites.py)."""
    count = len(columns.names)
    return nested_sites(
        [None] * count + ranges,
        columns.threads + frames.threads,
        [*columns.starts, *frames.starts],
        [*columns.ends, *frames.ends],
        [*frames.sequence_numbers, *repeat(-1, len(ranges))],
        frames.backward + [False] * len(ranges),
    )[:count]


@dataclass
class TraceColumns:
    """A trace's events read: the columns, each ``[memory]`` instant's ``args`` (in the
    order of ``columns.memory``), and whether its first events carry Input Dims."""

    columns: EventColumns
    memory_args: list
    has_shapes: bool


def read_columns(batches: Iterable[list], source: str = "trace") -> TraceColumns:
    """The columns of the events in ``batches`` (the trace's events in order)."""
    reader = ColumnReader(source)
    for batch in batches:
        reader.add(batch)
    return reader.finish()


class ColumnReader:
    """Reads batches of decoded trace events into one set of columns, a batch at a time
    (:meth:`add`), so the events of one batch can be let go before the next is decoded."""

    def __init__(self, source: str = "trace") -> None:
        self.source = source
        self._columns: dict[str, Any] = {
            name: array("q") if name in INT_COLUMNS else [] for name in _COLUMN_NAMES
        }
        self._threads: dict[int, int] = {}  # each thread number as one int object
        self._memory: list[RawEvent] = []
        self._memory_args: list = []
        self._waits: list[DeviceWait] = []
        self._set_apart: Counter[str] = Counter()
        self._present: set = set()
        self._read = 0
        self._shapes: dict[bytes, bytes] = {}  # equal shapes as one bytes object
        self._stacks: dict[str, str | None] = {}  # each call stack's kept copy, read once
        self._sites: list[str | None] | None = None  # None until an event has a stack
        self._frames: dict[str, list] = {name: [] for name in _FRAME_NAMES}
        self._shape_probe = SHAPE_PROBE
        self._has_shapes = False

    def add(self, batch: list) -> None:
        """Read one batch of events (any part of the trace, in order)."""
        if self._shape_probe > 0:
            probe = batch[: self._shape_probe]
            self._shape_probe -= len(probe)
            self._has_shapes = self._has_shapes or any(
                entry.args is not None and bool(entry.args.input_dims) for entry in probe
            )
        try:
            self._add(batch)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ReportError(
                f"{self.source} has an event with a time, id or size that is not a number or "
                f"is out of range ({exc}): the trace is damaged"
            ) from None

    def _add(self, batch: list) -> None:
        complete, categories, classes, set_apart, present = _placed(batch)
        memory, memory_args = _memory_instants(batch, self._threads)
        self._read += len(complete) + len(memory)
        self._memory += memory
        self._memory_args += memory_args
        self._set_apart.update(set_apart)
        self._present |= present
        names = list(map(_NAME, complete))
        if set(map(type, names)) - {str}:
            names = [name if type(name) is str else str(name) for name in names]
        if not FILTERED_NAMES.isdisjoint(names):
            kept = [
                (e, n, c, k)
                for e, n, c, k in zip(complete, names, categories, classes, strict=True)
                if n not in FILTERED_NAMES
            ]
            complete, names = [e for e, *_ in kept], [n for _, n, *_ in kept]
            categories, classes = [c for *_, c, _ in kept], [k for *_, k in kept]
        on_device = list(map(ON_DEVICE.__contains__, classes))
        starts = nanoseconds(list(map(_TS, complete)))
        durations = nanoseconds(list(map(_DURATION, complete)))
        ends = list(map(add, starts, durations))
        if min(durations, default=0) < 0 or max(map(abs, ends), default=0) >= TIME_LIMIT_NS:
            raise ValueError("a negative duration, or a time past 292 years")
        args = list(map(_ARGS, complete))
        # 2021 traces spell it "external id" on runtime calls and kernels.
        externals = [
            0 if a is None else int(a.external_id or a.legacy_external_id or 0) for a in args
        ]
        correlations = [None if a is None else a.correlation for a in args]
        if any(on_device) or correlations.count(None) < len(correlations):
            linked_ids = [
                external if device or correlation is not None else 0
                for external, device, correlation in zip(
                    externals, on_device, correlations, strict=True
                )
            ]
            correlation_ids = [
                int(correlation or 0) if linked or correlation is not None else external
                for correlation, linked, external in zip(
                    correlations, linked_ids, externals, strict=True
                )
            ]
        else:  # CPU events only: no kernel or runtime event links to an operator
            linked_ids, correlation_ids = [0] * len(externals), externals
        shared = self._shapes
        shapes = [
            shared.setdefault(shape, shape) if shape != b"null" else NO_SHAPES
            for shape in (
                bytes(a.input_dims) if a is not None and a.input_dims and not device else NO_SHAPES
                for a, device in zip(args, on_device, strict=True)
            )
        ]
        threads = _thread_numbers(list(map(_THREAD, complete)), self._threads)
        columns = self._columns
        for name, values in (
            ("names", map(sys.intern, names)),
            ("devices", ["CUDA" if device else "CPU" for device in on_device]),
            ("threads", threads),
            ("starts", starts),
            ("ends", ends),
            ("correlation_ids", correlation_ids),
            ("linked_ids", linked_ids),
            ("shapes", shapes),
            ("annotations", [category == "user_annotation" for category in categories]),
            ("activities", categories),
        ):
            _extend(columns, name, values)
        # autograd's, for a trace's python_function frames (read only where it has them)
        _extend(
            columns,
            "sequence_numbers",
            [-1 if a is None or type(a.sequence) is not int else a.sequence for a in args],
        )
        columns["backward"].extend(
            a is not None and a.forward_thread not in (0, None) for a in args
        )
        self._waits += _device_waits(batch)
        sites = call_sites([None if a is None else a.call_stack for a in args], self._stacks)
        if sites and self._sites is None:
            self._sites = [None] * (len(columns["names"]) - len(sites))
        if self._sites is not None:
            self._sites += sites or repeat(None, len(names))
        if PYTHON_FUNCTION in present:
            _add_frames(self._frames, batch, self._threads)

    def snapshot(self) -> TraceColumns:
        """The columns of the batches added so far, as :meth:`finish` gives them, while
        this reader goes on: its containers are copied (grouping adds to the columns it
        is given), the values in them shared."""
        copy = object.__new__(ColumnReader)
        copy.__dict__.update(self.__dict__)
        copy._columns = {name: column[:] for name, column in self._columns.items()}
        copy._frames = {name: values[:] for name, values in self._frames.items()}
        copy._memory, copy._memory_args = self._memory[:], self._memory_args[:]
        copy._waits, copy._set_apart = self._waits[:], Counter(self._set_apart)
        copy._sites = None if self._sites is None else self._sites[:]
        return copy.finish()

    def finish(self) -> TraceColumns:
        """The columns of every batch added."""
        columns = self._columns
        sequence_numbers, backward = columns.pop("sequence_numbers"), columns.pop("backward")
        frames = None
        if self._frames["names"]:
            frames = PythonFrames(
                **self._frames, sequence_numbers=sequence_numbers, backward=backward
            )
        count = len(columns["names"])
        events = EventColumns(
            **columns,
            asynchronous=[False] * count,
            memory=self._memory,
            event_count=self._read,
            set_apart=dict(self._set_apart),
            device_waits=self._waits,
            sites=self._sites or [],
            sites_from=FROM_CALL_STACK if self._sites else None,
            python_frames=frames,
        )
        if not events.sites and frames is not None:
            ranges = [python_function_site(name) for name in frames.names]
            if any(ranges):
                events.sites = framed_sites(frames, ranges, events)
                events.sites_from = FROM_PYTHON_EVENTS
        return TraceColumns(events, self._memory_args, self._has_shapes)


_COLUMN_NAMES = (
    "names", "devices", "threads", "starts", "ends", "correlation_ids", "linked_ids",
    "shapes", "annotations", "activities", "sequence_numbers", "backward",
)  # fmt: skip
_FRAME_NAMES = ("names", "threads", "starts", "ends")
# Times and ids as 8-byte integers, not an int object each (40 bytes): a 1M-event trace's
# columns shrink by ~100 MiB. An id past 64 bits turns its column into a list again.
INT_COLUMNS = frozenset({"starts", "ends", "correlation_ids", "linked_ids", "sequence_numbers"})


def _extend(columns: dict[str, MutableSequence], name: str, values: Iterable) -> None:
    """Add ``values`` to the column ``name``: an array until a value does not fit in 8
    bytes, then a list (the array keeps what it took before the value that overflowed:
    that is cut off first, so no value is added twice)."""
    column = columns[name]
    if type(column) is array:
        values = list(values)
        before = len(column)
        try:
            column.extend(values)
            return
        except OverflowError:
            del column[before:]
            column = columns[name] = list(column)
    column.extend(values)


def _add_frames(frames: dict[str, list], trace_events: list, threads: dict[int, int]) -> None:
    """Kineto's ``python_function`` events (traces recorded with ``with_stack`` by torch
    2.x): each frame's name, thread, start and end, added to ``frames``."""
    found = [e for e in trace_events if e.ph == "X" and e.cat == PYTHON_FUNCTION]
    starts = nanoseconds(list(map(_TS, found)))
    frames["names"] += [sys.intern(name) if type(name) is str else "" for name in map(_NAME, found)]
    frames["threads"] += _thread_numbers(list(map(_THREAD, found)), threads)
    frames["starts"] += starts
    frames["ends"] += map(add, starts, nanoseconds(list(map(_DURATION, found))))
