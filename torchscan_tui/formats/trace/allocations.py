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
from itertools import compress
from operator import neg

from torchscan_tui.analysis.activities import CPU_OP
from torchscan_tui.analysis.memory_timeline import Allocation
from torchscan_tui.analysis.profiler_events import EventColumns
from torchscan_tui.formats.jsonio import decode_json


def _shapes(shapes: object) -> list:
    value = decode_json(shapes) if isinstance(shapes, bytes) else shapes
    return value if isinstance(value, list) else []


def trace_allocations(
    instants: Sequence, columns: EventColumns, times_ns: list[int], threads: list[int]
) -> tuple[list[Allocation], bool]:
    """The allocations of a trace's ``[memory]`` instants (``instants``: each one's
    ``args``, or None; ``times_ns`` and ``threads``: theirs, as the reader read them) and
    whether they could be paired (``Addr`` present)."""
    if not instants:
        return [], False
    makers = _outermost_ops(columns, list(zip(threads, times_ns, strict=True)))
    paired = all(args is not None and args.addr for args in instants)
    running: dict[str, int] = {}  # each device's level, where the trace has no total
    found = []
    for args, time_ns, (operator, shapes) in zip(instants, times_ns, makers, strict=True):
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
    wanted = {thread for thread, _ in instants}
    names, threads, starts, ends = columns.names, columns.threads, columns.starts, columns.ends
    # C-level passes pick the CPU ops; Python looks at those alone.
    cpu_ops = compress(range(len(names)), map(CPU_OP.__eq__, columns.classes))
    aten = [i for i in cpu_ops if threads[i] in wanted and names[i].startswith("aten::")]
    # By thread, then start, the longest first (an op before the ops it holds).
    keys = list(zip(map(threads.__getitem__, aten), map(starts.__getitem__, aten),
                    map(neg, map(ends.__getitem__, aten)), strict=True))  # fmt: skip
    order = [aten[k] for k in sorted(range(len(aten)), key=keys.__getitem__)]
    outermost: dict[int, tuple[list[int], list[int]]] = {}
    for index in order:
        op_starts, kept = outermost.setdefault(threads[index], ([], []))
        if not kept or starts[index] >= ends[kept[-1]]:
            kept.append(index)
            op_starts.append(starts[index])
    found: list[tuple[str | None, list]] = []
    decoded: dict[int, tuple[str, list]] = {}  # each holding op's, decoded once
    for thread, time_ns in instants:
        op_starts, kept = outermost.get(thread, ([], []))
        position = bisect_right(op_starts, time_ns) - 1
        if position >= 0 and ends[kept[position]] >= time_ns:
            holder = kept[position]
            maker = decoded.get(holder)
            if maker is None:
                maker = decoded[holder] = (names[holder], _shapes(columns.shapes[holder]))
            found.append(maker)
        else:
            found.append((None, []))
    return found
