"""Group raw profiler events into operator rows (pure Python: no torch, no textual).

This replays what ``prof.key_averages(group_by_input_shape=True)`` computes (same groups,
call counts, self times and net bytes) straight from the Kineto event list, without
building a ``FunctionEvent`` object per event, which is where most of torch's
post-processing time goes. The rules copied from ``torch.autograd.profiler`` are:

* utility ops (``aten::is_leaf``, record_function enter/exit, ...) and hidden events are
  dropped; ``[memory]`` instants are attributed to every CPU event whose interval holds
  them, and the ones no event holds become ``[memory]`` rows of their own;
* runtime events (``cudaLaunchKernel``, ...) nest under the op that made them, and the
  device work they launched counts towards that op's device self time, by the one rule
  of :mod:`~torchscan_tui.analysis.attribution` (device work no op launched gets a row of its own);
* nesting is per thread by interval containment; a child with its parent's name that is
  the parent's only child is folded into it (``_remove_dup_nodes``);
* self time is duration minus the children's durations; self memory likewise.

It works on :class:`~torchscan_tui.analysis.profiler_events.EventColumns`, and takes
plain :class:`~torchscan_tui.analysis.profiler_events.RawEvent` tuples too, so it is tested
with recorded events, which is how the CUDA paths are exercised on a machine without a GPU.
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import and_, le, lshift, or_, sub

from torchscan_tui.analysis.activities import (
    CPU_OP,
    DEVICE_ANNOTATION,
    DEVICE_WORK,
    RUNTIME,
    device_kind,
)
from torchscan_tui.analysis.attribution import (
    UNATTRIBUTED_REASONS,
    Attribution,
    KernelGroup,
    attribute_device_work,
    kernel_groups,
    place_runtime_calls,
)
from torchscan_tui.analysis.groups import (
    KIND_UNATTRIBUTED,
    Group,
    NodeFigures,
    group_nodes,
)
from torchscan_tui.analysis.nesting import fold_duplicate_nodes, nest
from torchscan_tui.analysis.profiler_events import (
    MEMORY_EVENT_NAME,
    OUT_OF_MEMORY_EVENT_NAME,
    EventColumns,
    RawEvent,
)

CPU_MEMORY_DEVICES = frozenset({"CPU", "MKLDNN", "IDEEP"})
_PROFILER_STEP = "ProfilerStep#"
_PROFILER_STEP_ROW = "ProfilerStep*"


@dataclass
class Aggregation:
    """What :func:`aggregate_events` found."""

    groups: list[Group]
    event_count: int
    device_event_count: int
    kernels: list[KernelGroup] = field(default_factory=list)
    device_ns: int = 0  # all device work, attributed or not
    unattributed_ns: dict[str, int] = field(default_factory=dict)  # by unattributed row
    device_annotations: int = 0  # GPU-side ranges seen, never summed
    device_kind: str | None = None


class _MemoryIndex:
    """CPU ``[memory]`` instants sorted by time, with prefix sums for interval totals."""

    def __init__(self, records: list[RawEvent]):
        ordered = sorted(records, key=lambda record: record.start_ns)
        self.records = ordered
        self.starts = [record.start_ns for record in ordered]
        self.prefix = [0]
        running = 0
        for record in ordered:
            running += record.nbytes if record.device_type in CPU_MEMORY_DEVICES else 0
            self.prefix.append(running)
        self._cover = [0] * (len(ordered) + 1)

    def attribute(
        self, devices: list[str], starts: Sequence[int], ends: Sequence[int]
    ) -> list[int]:
        """CPU bytes each CPU event's interval holds (0 for other events).

        Also notes which records some interval held, for :meth:`unattributed`.
        """
        if not self.records:
            return [0] * len(devices)
        memory_starts, prefix, cover = self.starts, self.prefix, self._cover
        # map() over the C bisect functions: no Python frame per event.
        lows = list(map(bisect_left, repeat(memory_starts), starts))
        # An event holds a record when the first record from its start on is not after
        # its end: one C comparison per event finds the quarter or so that do, and only
        # those need their end's position and a Python step (103 -> 77 ms, 80k events).
        firsts = [*memory_starts, math.inf]
        holding = [
            index
            for index in compress(range(len(lows)), map(le, map(firsts.__getitem__, lows), ends))
            if devices[index] == "CPU"
        ]
        highs = map(bisect_right, repeat(memory_starts), map(ends.__getitem__, holding))
        held = [0] * len(devices)
        for index, high in zip(holding, highs, strict=True):
            low = lows[index]
            cover[low] += 1
            cover[high] -= 1
            held[index] = prefix[high] - prefix[low]
        return held

    def unattributed(self) -> list[RawEvent]:
        """Records no CPU event's interval held: torch lists them as top-level rows."""
        depth = 0
        loose = []
        for index, record in enumerate(self.records):
            depth += self._cover[index]
            if depth == 0:
                loose.append(record)
        return loose


@dataclass
class _Nodes:
    """What grouping knows of each node, as parallel lists: the kept events first, then
    the memory records no event held (rows of their own). Threads are amended as runtime
    calls are placed on their operators' threads."""

    names: list[str]
    devices: list[str]
    threads: list[int]
    starts: MutableSequence[int]
    ends: MutableSequence[int]
    annotations: list[bool]
    shapes: list
    links: MutableSequence[int]  # linked correlation id, 0 for none
    classes: list[str]  # activity class (see :mod:`~torchscan_tui.analysis.activities`)
    synchronous_cpu: list[bool]
    cpu_memory: list[int]  # CPU bytes allocated within the node's interval
    flops: list[int]  # what torch counted for the node; empty: no FLOPs recorded
    sites: list[str | None]  # the node's call site (analysis/sites.py); empty: no stacks

    # The lists read as they are are the columns' own (no copy of a million events) until
    # a memory record is added: then they are copied, never appended to in place.
    shared: bool = True

    @classmethod
    def of(cls, columns: EventColumns, memory: _MemoryIndex) -> _Nodes:
        names = columns.names
        steps = {name for name in set(names) if name.startswith(_PROFILER_STEP)}
        if steps:  # torch shows every "ProfilerStep#N" as one "ProfilerStep*" row
            names = [_PROFILER_STEP_ROW if name in steps else name for name in names]
        devices, starts, ends = columns.devices, columns.starts, columns.ends
        return cls(
            # Interned: equal names become one string, so every later set, dict and
            # comparison over 100k of them matches by identity (~20-60 ms less grouping).
            names=list(map(sys.intern, names)),
            devices=devices,
            threads=list(columns.threads),  # amended as runtime calls are placed
            starts=starts,
            ends=ends,
            annotations=columns.annotations,
            shapes=columns.shapes,
            links=columns.linked_ids,
            classes=columns.classes,
            # A CPU event is an op, a range or a runtime call (the device fallback of
            # event_classes and the trace reader's classes both see to it): it nests.
            synchronous_cpu=[
                device == "CPU" and not is_async
                for device, is_async in zip(devices, columns.asynchronous, strict=True)
            ],
            cpu_memory=memory.attribute(devices, starts, ends),
            flops=columns.flops,
            sites=columns.sites,
        )

    def _own(self) -> None:
        """Copy the lists shared with the columns, before they grow: each as what it is
        (an array of times stays one, not an int object per event)."""
        for name in ("devices", "starts", "ends", "annotations", "shapes", "links",
                     "classes", "flops", "sites"):  # fmt: skip
            setattr(self, name, getattr(self, name)[:])
        self.shared = False

    def add_record(self, record: RawEvent) -> None:
        """A memory record as a node of its own: an instant, on its own thread."""
        if self.shared:
            self._own()
        self.names.append(record.name)
        self.devices.append(record.device_type)
        self.threads.append(record.thread)
        self.starts.append(record.start_ns)
        self.ends.append(record.start_ns)
        self.annotations.append(False)
        self.shapes.append([])
        self.links.append(0)
        self.classes.append(CPU_OP)
        self.synchronous_cpu.append(True)
        self.cpu_memory.append(record.nbytes if record.device_type in CPU_MEMORY_DEVICES else 0)
        if self.flops:
            self.flops.append(0)
        if self.sites:
            self.sites.append(None)


def aggregate_events(events: Sequence[RawEvent] | EventColumns, split: bool = False) -> Aggregation:
    """Group events by (name, input shapes) exactly as ``key_averages`` would.

    Written as passes over parallel lists rather than per-event objects: this runs over
    hundreds of thousands of events and every attribute lookup in the loops counts.
    ``split``: a big profile's last pass may sum half its nodes in a forked child
    (:func:`~torchscan_tui.analysis.groups.group_nodes`); the groups are the same.
    """
    columns = events if isinstance(events, EventColumns) else EventColumns.from_events(events)
    memory = _MemoryIndex([r for r in columns.memory if r.name == MEMORY_EVENT_NAME])
    nodes = _Nodes.of(columns, memory)
    # A CPU profile has ops alone: no pass to count the classes that are not there.
    rare = {DEVICE_WORK, RUNTIME, DEVICE_ANNOTATION}.intersection(nodes.classes)
    class_counts = Counter(nodes.classes) if rare else Counter()
    linking = bool(class_counts[DEVICE_WORK] or class_counts[RUNTIME])
    # The runtime calls, once (the memory records added below are no runtime calls).
    runtime_calls = array(
        "q",
        compress(range(len(nodes.classes)), map(RUNTIME.__eq__, nodes.classes))
        if class_counts[RUNTIME]
        else (),
    )
    for record in memory.unattributed():
        nodes.add_record(record)
    for record in columns.memory:
        if record.name == OUT_OF_MEMORY_EVENT_NAME:
            nodes.add_record(record)

    starts, ends, threads = nodes.starts, nodes.ends, nodes.threads
    count = len(starts)
    # torch sorts globally by (start, -end), then stably by thread. Before the op ids
    # are mapped: the sort's keys (an int object per event) and that map are never held
    # at once (a 1M-event trace's grouping peaked ~30 MiB higher).
    order = time_order(starts, ends)
    op_ids, op_threads = (
        _op_ids(nodes, columns.correlation_ids, runtime_calls) if linking else ({}, set())
    )
    if runtime_calls:
        place_runtime_calls(
            runtime_calls, op_ids, op_threads, nodes.links, threads, starts, ends
        )  # fmt: skip
    synchronous = nodes.synchronous_cpu
    nested = array("q", sorted(compress(order, map(synchronous.__getitem__, order)),
                               key=threads.__getitem__))  # fmt: skip
    nesting = nest(nested, threads, starts, ends, nodes.cpu_memory)
    parent = nesting.parent
    # 8-byte integers, not an int object each: a million events' grouping holds ~100 MiB
    # less (issue 31).
    durations = array("q", map(sub, ends, starts))
    classes = nodes.classes
    attribution = attribute_device_work(
        work=array("q", compress(order, map(DEVICE_WORK.__eq__, map(classes.__getitem__, order))))
        if linking
        else array("q"),
        runtime_calls=runtime_calls if linking else [],
        correlation_ids=columns.correlation_ids,
        links=nodes.links,
        op_ids=op_ids,
        parent=parent,
        durations=durations,
        classes=classes,
    )
    del op_ids  # ~100 bytes an op: let go before the passes below allocate theirs
    alive = fold_duplicate_nodes(
        order, nested, nodes.names, nesting, durations, nodes.cpu_memory, attribution.op_device_ns
    )
    # Self time and self memory: each node's live children's totals come off its own.
    self_ns = array("q", map(sub, durations, nesting.children_ns))
    self_bytes = list(map(sub, nodes.cpu_memory, nesting.children_bytes))
    del nesting

    # A caller is the nearest enclosing user annotation; parents come before children.
    callers: list[str | None] = [None] * count
    names, annotations = nodes.names, nodes.annotations
    for index in nested:
        up = parent[index]
        if up >= 0 and alive[index]:
            callers[index] = names[up] if annotations[up] else callers[up]

    on_cpu = map("CPU".__eq__, map(nodes.devices.__getitem__, order))
    figures = NodeFigures(
        names=names,
        annotations=annotations,
        shapes=nodes.shapes,
        links=nodes.links,
        classes=classes,
        timed=synchronous,
        self_ns=self_ns,
        self_bytes=self_bytes,
        device_ns=attribution.op_device_ns,
        durations=durations,
        device_total_ns=_inclusive(attribution.op_device_ns, nested, parent, alive),
        flops=nodes.flops,
        sites=nodes.sites,
        callers=callers,
    )
    groups = group_nodes(
        figures,
        array("q", compress(order, map(and_, map(alive.__getitem__, order), on_cpu))),
        split=split,
    )
    groups += _unattributed_groups(attribution)
    return Aggregation(
        groups=groups,
        event_count=columns.event_count,
        device_event_count=class_counts[DEVICE_WORK],
        kernels=kernel_groups(attribution, names, columns.activities, durations),
        device_ns=sum(map(durations.__getitem__, attribution.work)),
        unattributed_ns=attribution.unattributed_ns,
        device_annotations=class_counts[DEVICE_ANNOTATION],
        device_kind=device_kind(set(columns.activities), {names[i] for i in runtime_calls})
        if linking
        else None,
    )


def _inclusive(
    self_values: list[int], nested: Sequence[int], parent: Sequence[int], alive: list[bool]
) -> list[int]:
    """Each node's value with its live descendants' (device time: its own kernels and
    those of the ops it called). ``nested`` puts parents before their children."""
    if not any(self_values):  # a CPU profile: no device time anywhere
        return self_values
    totals = list(self_values)
    for index in reversed(nested):
        up = parent[index]
        if up >= 0 and alive[index]:
            totals[up] += totals[index]
    return totals


def time_order(starts: Sequence[int], ends: Sequence[int]) -> array:
    """The node numbers by start, the latest end first among equal starts, and in node
    order among equal times (what two stable sorts give: by end, latest first, then by
    start).

    One sort of one int per node that packs the three (start, end, number: each an
    offset from the least, in as many bits as its range needs), with no key list: two
    keyed sorts held two lists of an int object per node at once (~80 MiB at 1M nodes,
    the grouping's peak while the summaries' child runs beside it). As 8-byte integers
    from here, not an int object each: the lists picked from the order would hold theirs
    too (a million-event trace's open peaked ~25 MiB higher with them)."""
    count = len(starts)
    if not count:
        return array("q")
    first, last = min(starts), max(ends)
    number_bits = count.bit_length()
    end_bits = (last - min(ends)).bit_length()
    keys = list(
        map(
            or_,
            map(lshift, map(sub, starts, repeat(first)), repeat(end_bits + number_bits)),
            map(
                or_,
                map(lshift, map(sub, repeat(last), ends), repeat(number_bits)),
                range(count),
            ),
        )
    )
    keys.sort()
    return array("q", map(and_, keys, repeat((1 << number_bits) - 1)))


def _op_ids(
    nodes: _Nodes, correlation_ids: Sequence[int], runtime_calls: Sequence[int]
) -> tuple[dict[int, int], set[int]]:
    """Each CPU op's correlation id (``External id``) to its node, for the ops that
    runtime calls and device events link to (what :func:`place_runtime_calls` and
    :func:`attribute_device_work` look up), and which of the runtime calls' threads hold
    an op with an id (the only threads :func:`place_runtime_calls` asks about). The
    events' nodes only: the memory records added after them have no id.

    A GPU trace's ops mostly launch nothing: a map of every op's id was ~100 bytes an op
    at the grouping's peak (43 MiB of a 1M-event trace's). The events whose id is linked
    are found in C, and only they are looked at in Python."""
    events = len(correlation_ids)
    links, classes, synchronous = nodes.links, nodes.classes, nodes.synchronous_cpu
    linked = set(map(links.__getitem__, runtime_calls))
    linked.update(compress(links, map(DEVICE_WORK.__eq__, classes)))
    linked.discard(0)
    candidates = compress(range(events), map(linked.__contains__, correlation_ids))
    # In order: the last op of an id wins, as in a dict built over every op.
    op_ids = {
        correlation_ids[index]: index
        for index in candidates
        if synchronous[index] and classes[index] == CPU_OP
    }
    return op_ids, _threads_with_ops(nodes, correlation_ids, runtime_calls)


def _threads_with_ops(
    nodes: _Nodes, correlation_ids: Sequence[int], runtime_calls: Sequence[int]
) -> set[int]:
    """The runtime calls' threads that hold a CPU op with a correlation id: a handful of
    threads, each looked for in C until its first such op (a trace's runtime calls share
    their ops' threads, found at once; live, torch numbers op threads apart)."""
    threads, classes, synchronous = nodes.threads, nodes.classes, nodes.synchronous_cpu
    events = len(correlation_ids)
    found: set[int] = set()
    for thread in set(map(threads.__getitem__, runtime_calls)):
        on_thread = compress(range(events), map(thread.__eq__, threads))
        if any(
            synchronous[index] and classes[index] == CPU_OP and correlation_ids[index]
            for index in on_thread
        ):
            found.add(thread)
    return found


def _unattributed_groups(attribution: Attribution) -> list[Group]:
    """One explicit row per reason for device work that reached no operator."""
    groups = []
    for name in UNATTRIBUTED_REASONS:
        if name in attribution.unattributed_ns:
            group = Group(name, [], KIND_UNATTRIBUTED)
            group.calls = attribution.unattributed_calls[name]
            group.device_self_ns = attribution.unattributed_ns[name]
            groups.append(group)
    return groups
