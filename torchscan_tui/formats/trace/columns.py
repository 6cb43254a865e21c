"""A trace's decoded events as the columns grouping reads (no torch).

Complete (``"X"``) events become columns, one comprehension or ``map`` per field: this
runs over every event of the trace, so no per-event tuple or object is kept. ``Input
Dims`` stay JSON bytes (grouping keys on them as they are); times become integer
nanoseconds (what each field becomes: :mod:`~torchscan_tui.formats.trace.event_fields`).
Events arrive in batches (:mod:`~torchscan_tui.formats.trace.stream` decodes a big file a
piece at a time): each batch is read into the columns and let go, and repeated strings
(names, call stacks, shapes) are kept once, so the columns cost a fraction of the events
they came from.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, MutableSequence
from dataclasses import dataclass
from itertools import repeat
from operator import add
from typing import Any

from torchscan_tui.analysis.profiler_events import (
    DEVICE_WAIT_ACTIVITY,
    FILTERED_NAMES,
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
from torchscan_tui.formats.trace.event_fields import (
    ARGS,
    DURATION,
    NAME,
    ON_DEVICE,
    PYTHON_FUNCTION,
    THREAD,
    TS,
    add_frames,
    device_waits,
    memory_instants,
    nanoseconds,
    placed,
    thread_numbers,
)

__all__ = ["ColumnReader", "TraceColumns", "framed_sites", "nanoseconds", "read_columns"]

TIME_LIMIT_NS = 2**63  # no clock a profiler reads goes past it (292 years)
NO_SHAPES = b"[]"
SHAPE_PROBE = 5000  # the first events looked at for Input Dims (was it recorded?)


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
        self._shape_probe = SHAPE_PROBE  # of the first events, how many are not looked at
        self._first_shaped: int | None = None  # where the first with Input Dims is among them

    def __getstate__(self) -> dict:
        """What is pickled (a reader sent from a second process, formats/trace/halves.py):
        all but the caches that keep equal values as one object, which start empty."""
        state = self.__dict__.copy()
        for cache in _CACHES:
            del state[cache]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for cache in _CACHES:
            setattr(self, cache, {})

    def add(self, batch: list) -> None:
        """Read one batch of events (any part of the trace, in order)."""
        if self._shape_probe > 0:
            probe = batch[: self._shape_probe]
            seen = SHAPE_PROBE - self._shape_probe
            self._shape_probe -= len(probe)
            if self._first_shaped is None:
                self._first_shaped = next(
                    (
                        seen + index
                        for index, entry in enumerate(probe)
                        if entry.args is not None and bool(entry.args.input_dims)
                    ),
                    None,
                )
        try:
            self._add(batch)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ReportError(
                f"{self.source} has an event with a time, id or size that is not a number or "
                f"is out of range ({exc}): the trace is damaged"
            ) from None

    def _add(self, batch: list) -> None:
        complete, categories, classes, set_apart, present = placed(batch)
        memory, memory_args = memory_instants(batch, self._threads)
        self._read += len(complete) + len(memory)
        self._memory += memory
        self._memory_args += memory_args
        self._set_apart.update(set_apart)
        self._present |= present
        names = list(map(NAME, complete))
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
        starts = nanoseconds(list(map(TS, complete)))
        durations = nanoseconds(list(map(DURATION, complete)))
        ends = list(map(add, starts, durations))
        if min(durations, default=0) < 0 or max(map(abs, ends), default=0) >= TIME_LIMIT_NS:
            raise ValueError("a negative duration, or a time past 292 years")
        args = list(map(ARGS, complete))
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
        threads = thread_numbers(list(map(THREAD, complete)), self._threads)
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
        if DEVICE_WAIT_ACTIVITY in present:  # else no pass over the batch for none
            self._waits += device_waits(batch)
        sites = call_sites([None if a is None else a.call_stack for a in args], self._stacks)
        if sites and self._sites is None:
            self._sites = [None] * (len(columns["names"]) - len(sites))
        if self._sites is not None:
            self._sites += sites or repeat(None, len(names))
        if PYTHON_FUNCTION in present:
            add_frames(self._frames, batch, self._threads)

    def extend(self, later: ColumnReader) -> None:
        """Take in what ``later`` read, the events right after this reader's (a big file's
        second half, read in a second process: formats/trace/halves.py), as though this
        reader had read them: the columns joined, equal values kept as one object again
        (``later`` came through pickle), its call sites aligned with this reader's."""
        seen = SHAPE_PROBE - self._shape_probe
        if self._first_shaped is None and later._first_shaped is not None:
            if seen + later._first_shaped < SHAPE_PROBE:
                self._first_shaped = seen + later._first_shaped
        self._shape_probe = max(0, self._shape_probe - (SHAPE_PROBE - later._shape_probe))
        count, added = len(self._columns["names"]), len(later._columns["names"])
        threads = _kept_in(self._threads)
        keep = {"names": sys.intern, "threads": threads, "shapes": _kept_in(self._shapes)}
        for name, column in later._columns.items():
            kept = keep.get(name)
            _extend(self._columns, name, column if kept is None else _shared(column, kept))
        self._frames["names"] += _shared(later._frames["names"], sys.intern)
        self._frames["threads"] += _shared(later._frames["threads"], threads)
        self._frames["starts"] += later._frames["starts"]
        self._frames["ends"] += later._frames["ends"]
        if self._sites is not None or later._sites is not None:
            sites: list[str | None] = [None] * count if self._sites is None else self._sites
            sites += [None] * added if later._sites is None else later._sites
            self._sites = sites
        self._memory += later._memory
        self._memory_args += later._memory_args
        self._waits += later._waits
        self._set_apart.update(later._set_apart)
        self._present |= later._present
        self._read += later._read

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
        return TraceColumns(events, self._memory_args, self._first_shaped is not None)


_COLUMN_NAMES = (
    "names", "devices", "threads", "starts", "ends", "correlation_ids", "linked_ids",
    "shapes", "annotations", "activities", "sequence_numbers", "backward",
)  # fmt: skip
_FRAME_NAMES = ("names", "threads", "starts", "ends")
# Times and ids as 8-byte integers, not an int object each (40 bytes): a 1M-event trace's
# columns shrink by ~100 MiB. An id past 64 bits turns its column into a list again.
INT_COLUMNS = frozenset({"starts", "ends", "correlation_ids", "linked_ids", "sequence_numbers"})


# What keeps equal values as one object (never pickled: rebuilt as values are added).
_CACHES = ("_threads", "_shapes", "_stacks")


def _shared(values: list, keep: Callable[[Any], Any]) -> list:
    """``values`` with each distinct value as ``keep`` gives it (one object kept for all
    equal values): pickled values come back as new objects each; few are distinct, so
    the work is theirs."""
    same = {value: keep(value) for value in set(values)}
    return list(map(same.__getitem__, values))


def _kept_in(kept: dict) -> Callable[[Any], Any]:
    """The equal value kept in ``kept``, or the value itself, kept there from now on."""
    return lambda value: kept.setdefault(value, value)


def _extend(columns: dict[str, MutableSequence], name: str, values: Iterable) -> None:
    """Add ``values`` to the column ``name``: an array until a value does not fit in 8
    bytes, then a list (the array takes none of a batch with a value that overflows, so
    no value is added twice)."""
    column = columns[name]
    if type(column) is array:
        if type(values) is array:  # another reader's column: its bytes copied as they are
            column.extend(values)
            return
        values = values if type(values) is list else list(values)
        try:
            # fromlist, not extend: extend takes a list one item at a time through its
            # iterator, 2x the time (a 1M-event trace's five integer columns: ~0.1 s).
            # On an overflow the array is left as it was.
            column.fromlist(values)
            return
        except OverflowError:
            column = columns[name] = list(column)
    column.extend(values)
