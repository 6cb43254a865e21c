"""What one batch of a trace's decoded events gives, field by field (no torch).

The column reader (:mod:`~torchscan_tui.formats.trace.columns`) calls these on each
batch: which events are grouped and their categories, exact integer nanoseconds from
the trace's microseconds, thread ids as numbers, the ``[memory]`` instants, the device
waits and the ``python_function`` frames. Each runs over every event of a big trace, so
each is a comprehension or a C-level ``map``, never a per-event object kept.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from decimal import Decimal
from itertools import repeat
from operator import add, attrgetter, sub

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
    MEMORY_EVENT_NAME,
    DeviceWait,
    RawEvent,
)

KEPT_CLASSES = frozenset({CPU_OP, RUNTIME, DEVICE_WORK, DEVICE_ANNOTATION})
ON_DEVICE = frozenset({DEVICE_WORK, DEVICE_ANNOTATION})
FAST_EXACT_LIMIT_US = 2**42  # below it, round(us * 1000.0) is the exact nanosecond
PYTHON_FUNCTION = "python_function"
NAME, CATEGORY, TS, DURATION, ARGS, THREAD = map(
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


def thread_numbers(tids: list, kept: dict[int, int]) -> list[int]:
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


def memory_instants(trace_events: list, threads: dict[int, int]) -> tuple[list[RawEvent], list]:
    """The ``[memory]`` instants (allocations and frees) of decoded trace events, and
    each one's ``args`` (what the allocations read: address, bytes, total, device)."""
    instants = [
        entry for entry in trace_events if entry.ph == "i" and entry.name == MEMORY_EVENT_NAME
    ]
    args = list(map(ARGS, instants))
    times = nanoseconds(list(map(TS, instants)))
    events = list(
        map(
            RawEvent._make,
            zip(
                repeat(MEMORY_EVENT_NAME),
                ["CPU" if a is None or a.device_type == 0 else "CUDA" for a in args],
                repeat(False),
                thread_numbers(list(map(THREAD, instants)), threads),
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


def device_waits(trace_events: list) -> list[DeviceWait]:
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
    starts = nanoseconds(list(map(TS, waits)))
    ends = list(map(add, starts, nanoseconds(list(map(DURATION, waits)))))
    return [
        DeviceWait(str(entry.name), start, end, _stream_number(entry.args.correlation))
        for entry, start, end in zip(waits, starts, ends, strict=True)
    ]


def placed(trace_events: list) -> tuple[list, list[str], list[str], Counter, set]:
    """The complete events grouping reads, their canonical categories and activity
    classes, how many events of each category it set apart (waits and categories it
    cannot place: named in a diagnostic, never turned into CPU time), and every category
    present (as the trace spells it).

    One pass in Python over the events (the filter); the rest are C-level maps.
    """
    present = set(map(CATEGORY, trace_events))
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
    raw = list(map(CATEGORY, complete))
    return (
        complete,
        list(map(canonical.__getitem__, raw)),
        list(map(classes.__getitem__, raw)),
        set_apart,
        present,
    )


def add_frames(frames: dict[str, list], trace_events: list, threads: dict[int, int]) -> None:
    """Kineto's ``python_function`` events (traces recorded with ``with_stack`` by torch
    2.x): each frame's name, thread, start and end, added to ``frames``."""
    found = [e for e in trace_events if e.ph == "X" and e.cat == PYTHON_FUNCTION]
    starts = nanoseconds(list(map(TS, found)))
    frames["names"] += [sys.intern(name) if type(name) is str else "" for name in map(NAME, found)]
    frames["threads"] += thread_numbers(list(map(THREAD, found)), threads)
    frames["starts"] += starts
    frames["ends"] += map(add, starts, nanoseconds(list(map(DURATION, found))))
