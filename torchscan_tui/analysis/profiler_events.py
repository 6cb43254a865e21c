"""The two forms profiler events take on their way to rows (pure Python: no torch).

A :class:`RawEvent` is one event's fields, as read from the live Kineto results or a
recorded test. :class:`EventColumns` holds the same fields as parallel lists, one entry per
event, with the filtered-out names already dropped and the memory instants set apart: the
form grouping works on. Grouping passes over every event several times; over columns each
pass is a comprehension or a ``zip`` instead of attribute lookups on 100k objects, and a
trace reader can fill the columns straight from its decoded events.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import NamedTuple

from torchscan_tui.analysis.activities import event_classes

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"
MEMORY_NAMES = frozenset({MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME})
FILTERED_NAMES = frozenset(
    {
        *MEMORY_NAMES,
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)


WINDOW_START = "[torchscan] step window start"
WINDOW_END = "[torchscan] step window end"
STEP_END = "[torchscan] step end"  # between two profiled steps of a window
# Where a step's own profiler session starts (worker/step_sessions.py): the time between
# the step end before it and this marker was not profiled (the last session was read).
STEP_START = "[torchscan] step start"


class RawEvent(NamedTuple):
    """The fields of one Kineto event that grouping needs."""

    name: str
    device_type: str  # "CPU", "CUDA", ... (DeviceType member name)
    is_async: bool  # async, or started and ended on different threads
    thread: int
    start_ns: int
    end_ns: int
    correlation_id: int
    linked_correlation_id: int
    shapes: list  # or the JSON bytes of the shapes, as a trace holds them
    is_user_annotation: bool = False
    activity_type: str = ""
    nbytes: int = 0
    hidden: bool = False
    flops: int = 0  # what torch counted (``with_flops``: matmul, conv, ...), else 0


DEVICE_WAIT_ACTIVITY = "cuda_sync"


class DeviceWait(NamedTuple):
    """A synchronisation on a device's stream (``Stream Sync``, ``Context Sync``, ...)."""

    name: str
    start_ns: int
    end_ns: int
    correlation_id: int


# The RawEvent fields the columns keep, in the order from_events unpacks them.
_COLUMN_FIELDS = tuple(
    RawEvent._fields.index(name)
    for name in ("name", "device_type", "is_async", "thread", "start_ns", "end_ns",
                 "correlation_id", "linked_correlation_id", "shapes", "is_user_annotation",
                 "activity_type", "flops")
)  # fmt: skip


def kept_event(event: RawEvent) -> bool:
    """Whether grouping keeps ``event``: utility and hidden events are dropped."""
    return event.name not in FILTERED_NAMES and not event.hidden


@dataclass
class PythonFrames:
    """A trace's Kineto ``python_function`` events (its Python frames and ``nn.Module``
    forwards), and autograd's sequence number and backward flag of each of the columns'
    events: what call sites and the module tree read (analysis/sites.py, modules.py)."""

    names: list[str]
    threads: list[int]
    starts: list[int]
    ends: list[int]
    sequence_numbers: Sequence[int]  # per column event
    backward: list[bool]  # per column event


@dataclass
class EventColumns:
    """The events grouping keeps, as parallel lists in the events' order.

    ``memory`` holds the ``[memory]`` and ``[OutOfMemory]`` instants, which are not rows
    of their own unless no operator holds them; ``event_count`` counts every event read,
    the dropped ones included; ``set_apart`` counts, by trace category, the events a
    trace reader left out because they are not operators nor device work (waits, and
    categories it cannot place), so a report can name them. ``device_waits`` are the
    synchronisations drawn on a device's stream (``cuda_sync``): never device time of an
    operator, but busy time of the device timeline as HTA counts it.
    """

    names: list[str]
    devices: list[str]
    asynchronous: list[bool]
    threads: list[int]
    # Lists, or a trace's 8-byte ``array("q")`` (formats/trace/columns.py): read them by
    # index, iteration or map, never concatenate them with a list.
    starts: MutableSequence[int]
    ends: MutableSequence[int]
    correlation_ids: MutableSequence[int]
    linked_ids: MutableSequence[int]
    shapes: list
    annotations: list[bool]
    activities: list[str]
    memory: list[RawEvent]
    event_count: int
    set_apart: dict[str, int] = field(default_factory=dict)
    device_waits: list[DeviceWait] = field(default_factory=list)
    flops: list[int] = field(default_factory=list)  # empty: no FLOPs recorded (a trace)
    # Each event's call site, the innermost frame in the user's files (.sites); empty:
    # no stacks recorded.
    sites: list[str | None] = field(default_factory=list)
    sites_from: str | None = None  # what they were read from (analysis/sites.py)
    python_frames: PythonFrames | None = None  # a trace's python_function events

    @cached_property
    def classes(self) -> list[str]:
        """Each event's activity class (:func:`~.activities.event_classes`), worked out
        once for the readers that need it (grouping, the steps, the summaries)."""
        return event_classes(self.activities, self.devices)

    @classmethod
    def from_events(cls, events: Sequence[RawEvent]) -> EventColumns:
        """Columns of the events grouping keeps (utility and hidden events dropped)."""
        kept = [event for event in events if kept_event(event)]
        # A field at a time (a C-level pass each): zip(*kept) called with a million
        # arguments built every column twice over (tuples, then lists).
        (names, devices, asynchronous, threads, starts, ends, correlation_ids, linked_ids,
         shapes, annotations, activities, flops) = (
            list(map(itemgetter(field), kept)) for field in _COLUMN_FIELDS
        )  # fmt: skip
        return cls(
            names, devices, asynchronous, threads, starts, ends, correlation_ids, linked_ids,
            shapes, annotations, activities,
            memory=[event for event in events if event.name in MEMORY_NAMES],
            event_count=len(events),
            device_waits=[
                DeviceWait(event.name, event.start_ns, event.end_ns, event.correlation_id)
                for event in events
                if event.activity_type == DEVICE_WAIT_ACTIVITY
            ],
            flops=flops if any(flops) else [],
        )  # fmt: skip


def window_events(events: Sequence[RawEvent]) -> tuple[list[RawEvent], list[list[RawEvent]]]:
    """The events of a step window, and the same events step by step.

    The worker records marker events as the warm-up ends, between profiled steps and as
    the last step ends (each after the device's queue was drained); an event belongs to
    the window, and to a step, by its start. Markers are left out. Without a start marker
    the window is the whole profile (one "step"); without an end marker it runs to the
    profile's end (the run ended inside the window)."""
    start = next((e.start_ns for e in events if e.name == WINDOW_START), None)
    end = next((e.end_ns for e in events if e.name == WINDOW_END), None)
    markers = (WINDOW_START, WINDOW_END, STEP_END, STEP_START)
    if start is None:
        kept = [e for e in events if e.name not in markers]
        return kept, [kept]
    if end is None:
        end = max((e.end_ns for e in events), default=start)
    kept = [e for e in events if start <= e.start_ns <= end and e.name not in markers]
    bounds = sorted(e.start_ns for e in events if e.name == STEP_END and start <= e.start_ns <= end)
    steps: list[list[RawEvent]] = [[] for _ in range(len(bounds) + 1)]
    for event in kept:
        steps[bisect_right(bounds, event.start_ns)].append(event)
    return kept, steps


def profiler_steps(events: Sequence[RawEvent], ranges: Sequence) -> list[list[RawEvent]]:
    """A script's own profile cut into its steps (the ``ProfilerStep#N`` ranges of
    :func:`~.step_model.host_steps`, with ``start_ns`` and ``end_ns``): each step's
    events, by their start. Without such ranges, the whole profile is one step."""
    if not ranges:
        return [list(events)]
    starts = [step.start_ns for step in ranges]
    steps: list[list[RawEvent]] = [[] for _ in ranges]
    for event in events:
        index = bisect_right(starts, event.start_ns) - 1
        if index >= 0 and event.start_ns <= ranges[index].end_ns:
            steps[index].append(event)
    return steps
