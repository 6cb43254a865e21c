"""Group raw profiler events into operator rows (pure Python: no torch, no textual).

This replays what ``prof.key_averages(group_by_input_shape=True)`` computes (same groups,
call counts, self times and net bytes) straight from the Kineto event list, without
building a ``FunctionEvent`` object per event, which is where most of torch's
post-processing time goes. The rules copied from ``torch.autograd.profiler`` are:

* utility ops (``aten::is_leaf``, record_function enter/exit, ...) and hidden events are
  dropped; ``[memory]`` instants are attributed to every CPU event whose interval holds
  them, and the ones no event holds become ``[memory]`` rows of their own;
* runtime events (``cudaLaunchKernel``, ...) move to the thread of the op that caused
  them, and device kernels count towards that op's device self time;
* nesting is per thread by interval containment; a child with its parent's name that is
  the parent's only child is folded into it (``_remove_dup_nodes``);
* self time is duration minus the children's durations; self memory likewise.

Because it takes plain :class:`RawEvent` tuples it is tested with recorded events, which is
how the CUDA paths are exercised on a machine without a GPU.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"
FILTERED_NAMES = frozenset(
    {
        MEMORY_EVENT_NAME,
        OUT_OF_MEMORY_EVENT_NAME,
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
CPU_MEMORY_DEVICES = frozenset({"CPU", "MKLDNN", "IDEEP"})
KERNEL_DEVICES = frozenset({"CUDA", "PrivateUse1", "XPU"})
_PROFILER_STEP = re.compile(r"^ProfilerStep#")

KIND_OPERATOR = "operator"
KIND_RUNTIME = "runtime"
KIND_ANNOTATION = "annotation"
KIND_MEMORY = "memory"


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
    shapes: list
    is_user_annotation: bool = False
    activity_type: str = ""
    nbytes: int = 0
    hidden: bool = False


@dataclass
class Group:
    """One (operator, input shapes) row being accumulated."""

    operator: str
    input_shapes: list
    kind: str
    calls: int = 0
    cpu_self_ns: int = 0
    device_self_ns: int = 0
    cpu_net_bytes: int = 0
    callers: dict[str, int] = field(default_factory=dict)


@dataclass
class Aggregation:
    """What :func:`aggregate_events` found."""

    groups: list[Group]
    event_count: int
    device_event_count: int
    threads: int


def _is_runtime(event: RawEvent) -> bool:
    activity = event.activity_type
    return (
        event.linked_correlation_id > 0
        or activity.endswith("_runtime")
        or activity.endswith("_driver")
    )


def _kind(event: RawEvent) -> str:
    if event.name == MEMORY_EVENT_NAME or event.name == OUT_OF_MEMORY_EVENT_NAME:
        return KIND_MEMORY
    if event.is_user_annotation:
        return KIND_ANNOTATION
    if _is_runtime(event):
        return KIND_RUNTIME
    return KIND_OPERATOR


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
        self, events: Sequence[RawEvent], starts: list[int], ends: list[int]
    ) -> list[int]:
        """CPU bytes each CPU event's interval holds (0 for other events).

        Also notes which records some interval held, for :meth:`unattributed`.
        """
        if not self.records:
            return [0] * len(events)
        memory_starts, prefix, cover = self.starts, self.prefix, self._cover
        held = []
        for event, start, end in zip(events, starts, ends, strict=True):
            if event.device_type != "CPU":
                held.append(0)
                continue
            low = bisect_left(memory_starts, start)
            high = bisect_right(memory_starts, end, low)
            if high > low:
                cover[low] += 1
                cover[high] -= 1
            held.append(prefix[high] - prefix[low])
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


def aggregate_events(events: Sequence[RawEvent]) -> Aggregation:
    """Group events by (name, input shapes) exactly as ``key_averages`` would.

    Written as passes over parallel lists rather than per-event objects: this runs over
    hundreds of thousands of events and every attribute lookup in the loops counts.
    """
    memory = _MemoryIndex([event for event in events if event.name == MEMORY_EVENT_NAME])
    out_of_memory = [event for event in events if event.name == OUT_OF_MEMORY_EVENT_NAME]
    kept = [event for event in events if event.name not in FILTERED_NAMES and not event.hidden]

    names: list[str] = []
    threads: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    synchronous_cpu: list[bool] = []
    keys: list[tuple] = []
    for name, device, is_async, thread, start, end, _, _, shapes, annotation, *_ in kept:
        if name[:1] == "P":
            name = _PROFILER_STEP.sub("ProfilerStep*", name)
        names.append(name)
        threads.append(thread)
        starts.append(start)
        ends.append(end)
        synchronous_cpu.append(device == "CPU" and not is_async)
        shape_key = shapes if type(shapes) is bytes else str(shapes)
        keys.append((name, device, annotation, shape_key))
    cpu_memory = memory.attribute(kept, starts, ends)

    # Runtime events join the thread of the op that caused them; kernels add device time.
    kernels_ns: list[int] = [0] * len(kept)
    op_index = {
        event.correlation_id: index
        for index, event in enumerate(kept)
        if synchronous_cpu[index] and event.linked_correlation_id == 0
    }
    device_event_count = 0
    for index, event in enumerate(kept):
        linked = event.linked_correlation_id
        if event.device_type in KERNEL_DEVICES:
            device_event_count += 1
        if linked <= 0 or linked not in op_index:
            continue
        if event.device_type in KERNEL_DEVICES:
            kernels_ns[op_index[linked]] += ends[index] - starts[index]
        elif event.device_type == "CPU":
            threads[index] = threads[op_index[linked]]

    nodes = list(kept)
    for record in memory.unattributed() + out_of_memory:
        nodes.append(record._replace(end_ns=record.start_ns, is_async=False, shapes=[]))
        names.append(record.name)
        keys.append((record.name, record.device_type, False, "[]"))
        threads.append(record.thread)
        starts.append(record.start_ns)
        ends.append(record.start_ns)
        cpu_memory.append(record.nbytes if record.device_type in CPU_MEMORY_DEVICES else 0)
        synchronous_cpu.append(True)
        kernels_ns.append(0)

    count = len(nodes)
    # torch sorts globally by (start, -end), then stably by thread: one stable sort does both.
    sort_keys = list(zip(starts, [-end for end in ends], strict=True))
    order = sorted(range(count), key=sort_keys.__getitem__)
    parent: list[int] = [-1] * count
    children: list[list[int]] = [[] for _ in range(count)]
    stack: list[int] = []
    current_thread = None
    for index in sorted((i for i in order if synchronous_cpu[i]), key=threads.__getitem__):
        if threads[index] != current_thread:
            current_thread, stack = threads[index], []
        start, end = starts[index], ends[index]
        while stack:
            top_end = ends[stack[-1]]
            if start >= top_end or end > top_end:
                stack.pop()
            else:
                parent[index] = stack[-1]
                children[stack[-1]].append(index)
                break
        stack.append(index)

    alive = _fold_duplicate_nodes(order, names, parent, children, kernels_ns)

    # Self time and self memory: each live child's totals come off its parent's.
    children_ns = [0] * count
    children_bytes = [0] * count
    for index in range(count):
        up = parent[index]
        if up >= 0 and alive[index]:
            children_ns[up] += ends[index] - starts[index]
            children_bytes[up] += cpu_memory[index]

    callers: list[str | None] = [None] * count
    groups: dict[tuple, Group] = {}
    for index in order:
        if not alive[index]:
            continue
        node = nodes[index]
        up = parent[index]
        if up >= 0:
            callers[index] = names[up] if nodes[up].is_user_annotation else callers[up]
        key = keys[index]
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(names[index], node.shapes, _kind(node))
        group.calls += 1
        if key[1] != "CPU":
            continue
        if synchronous_cpu[index]:
            group.cpu_self_ns += ends[index] - starts[index] - children_ns[index]
            group.cpu_net_bytes += cpu_memory[index] - children_bytes[index]
            group.device_self_ns += kernels_ns[index]
        caller = callers[index]
        if caller is not None:
            group.callers[caller] = group.callers.get(caller, 0) + 1

    cpu_groups = [group for key, group in groups.items() if key[1] == "CPU"]
    return Aggregation(
        groups=cpu_groups,
        event_count=len(events),
        device_event_count=device_event_count,
        threads=len(set(threads)),
    )


def _fold_duplicate_nodes(
    order: list[int],
    names: list[str],
    parent: list[int],
    children: list[list[int]],
    kernels_ns: list[int],
) -> list[bool]:
    """torch's ``_remove_dup_nodes``: fold an only child that repeats its parent's name.

    The fold lifts the child's children and kernels into the parent, and repeats until
    nothing changes. Returns which nodes survive.
    """
    alive = [True] * len(parent)
    while True:
        removed = False
        for index in order:
            if not alive[index]:
                continue
            up = parent[index]
            if up >= 0 and names[up] == names[index] and len(children[up]) == 1:
                children[up] = children[index]
                kernels_ns[up] = kernels_ns[index]
                for kid in children[index]:
                    parent[kid] = up
                alive[index] = False
                removed = True
        if not removed:
            return alive
