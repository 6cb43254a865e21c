"""A trace's allocations, for the memory timeline (:mod:`~torchscan_tui.analysis.memory_timeline`).

A trace recorded with ``profile_memory=True`` has a ``[memory]`` instant per allocation
and free: ``Bytes``, and in traces since 2022 ``Addr`` and ``Total Allocated``. Each is
put on the outermost ATen op holding it on its thread (the op a user wrote), as a live
profile's are. Without ``Total Allocated`` the level is the running sum of ``Bytes``
from the trace's start; without ``Addr`` nothing can be paired, so the table of what was
held at the peak is empty (the block says so).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from torchscan_tui.analysis.activities import CPU_OP
from torchscan_tui.analysis.memory_timeline import Allocation
from torchscan_tui.analysis.profiler_events import MEMORY_EVENT_NAME, EventColumns
from torchscan_tui.formats.jsonio import decode_json


def _shapes(shapes: object) -> list:
    value = decode_json(shapes) if isinstance(shapes, bytes) else shapes
    return value if isinstance(value, list) else []


def trace_allocations(
    trace_events: Sequence, columns: EventColumns, times_ns: list[int], threads: list[int]
) -> tuple[list[Allocation], bool]:
    """The allocations of ``trace_events``' ``[memory]`` instants (``times_ns`` and
    ``threads``: theirs, as the reader read them) and whether they could be paired
    (``Addr`` present)."""
    instants = [
        entry for entry in trace_events if entry.ph == "i" and entry.name == MEMORY_EVENT_NAME
    ]
    if not instants:
        return [], False
    makers = _outermost_ops(columns, list(zip(threads, times_ns, strict=True)))
    paired = all(entry.args is not None and entry.args.addr for entry in instants)
    running: dict[str, int] = {}  # each device's level, where the trace has no total
    found = []
    for entry, time_ns, (operator, shapes) in zip(instants, times_ns, makers, strict=True):
        args = entry.args
        nbytes = int(args.nbytes or 0) if args is not None else 0
        total = args.total_allocated if args is not None else None
        device = "cpu" if args is None or not args.device_type else f"cuda:{args.device_id}"
        running[device] = running.get(device, 0) + nbytes
        found.append(
            Allocation(time_ns, int(args.addr or 0) if args is not None else 0, nbytes,
                       int(total) if total is not None else running[device], device, operator,
                       shapes)
        )  # fmt: skip
    return found, paired


def _outermost_ops(
    columns: EventColumns, instants: list[tuple[int, int]]
) -> list[tuple[str | None, list]]:
    """For each (thread, time) instant, the outermost ATen op holding it, with its shapes:
    each thread's outermost ATen ops do not overlap, so a bisect finds it."""
    by_thread: dict[int, list[int]] = {}
    for index, (name, activity_class) in enumerate(
        zip(columns.names, columns.classes, strict=True)
    ):
        if activity_class == CPU_OP and name.startswith("aten::"):
            by_thread.setdefault(columns.threads[index], []).append(index)
    starts, ends = columns.starts, columns.ends
    outermost: dict[int, tuple[list[int], list[int]]] = {}
    for thread, indices in by_thread.items():
        indices.sort(key=lambda i: (starts[i], -ends[i]))
        kept: list[int] = []
        for index in indices:
            if not kept or starts[index] >= ends[kept[-1]]:
                kept.append(index)
        outermost[thread] = ([starts[i] for i in kept], kept)
    found: list[tuple[str | None, list]] = []
    for thread, time_ns in instants:
        op_starts, kept = outermost.get(thread, ([], []))
        position = bisect_right(op_starts, time_ns) - 1
        if position >= 0 and ends[kept[position]] >= time_ns:
            holder = kept[position]
            found.append((columns.names[holder], _shapes(columns.shapes[holder])))
        else:
            found.append((None, []))
    return found
