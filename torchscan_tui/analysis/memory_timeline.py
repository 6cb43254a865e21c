"""The allocator over a profile: its timeline, its peak, and what was held at the peak (pure).

The profile records every allocation and free of the caching allocators (CPU, and each
device's) with the pointer, the size and the allocator's total after it, under the op
that made it (``profile_memory=True``; live from the profile's event tree, from a trace's
``[memory]`` instants). From them, per device:

* the timeline: what the allocator held above its level when the window opened, over
  the window (at most :data:`TIMELINE_POINTS` points, each the highest of its stretch, so
  the peak stays on it);
* the peak: its height, when, in which step, under which op;
* what was held at the peak: the allocations made in the window and not freed by then,
  grouped by the op and input shapes that made them, largest first: the TensorBoard
  plugin's memory table and memray's "at the peak" view. Memory allocated before the
  window is in the allocator's total but not in this table (its maker was not profiled).

The allocator's figures are tensors only; the process's peak RSS (the kernel's) holds
Python, libtorch and fragmentation too: the screen shows both, each said for what it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from torchscan_tui.analysis.records import DeviceMemory, HeldAtPeak, MemoryBlock
from torchscan_tui.common.formatting import format_bytes, format_shapes

TIMELINE_POINTS = 400
HELD_ROWS = 20


class Allocation(NamedTuple):
    """One allocation (``nbytes`` > 0) or free (< 0) by a caching allocator."""

    time_ns: int
    ptr: int
    nbytes: int
    total: int  # the allocator's total after it
    device: str  # "cpu", "cuda:0"
    operator: str | None  # the op that made it (None: outside any op)
    shapes: list  # that op's input shapes


class StepSpan(NamedTuple):
    name: str
    start_ns: int
    end_ns: int


def memory_block(
    allocations: Sequence[Allocation],
    steps: Sequence[StepSpan],
    origin_ns: int,
    paired: bool = True,
) -> MemoryBlock | None:
    """Each device's timeline, peak and what it held at the peak; None without any
    allocation. ``origin_ns``: the window's start (time 0 of the timeline); ``paired``:
    the allocations carry their pointers (an old trace's do not: nothing is said held)."""
    by_device: dict[str, list[Allocation]] = {}
    for allocation in sorted(allocations, key=lambda a: a.time_ns):
        by_device.setdefault(allocation.device, []).append(allocation)
    if not by_device:
        return None
    return {
        "devices": [
            _device_memory(device, records, steps, origin_ns, paired)
            for device, records in sorted(by_device.items())
        ],
        "steps": [[step.name, (step.start_ns - origin_ns) / 1e9] for step in steps],
    }


def _device_memory(
    device: str,
    records: list[Allocation],
    steps: Sequence[StepSpan],
    origin_ns: int,
    paired: bool,
) -> DeviceMemory:
    base = records[0].total - records[0].nbytes  # held when the window opened
    levels = [record.total - base for record in records]
    peak_index = max(range(len(levels)), key=levels.__getitem__)
    peak = records[peak_index]
    return {
        "device": device,
        "start_total_bytes": base,
        "peak_bytes": levels[peak_index],
        "peak_total_bytes": peak.total,
        "peak_seconds": (peak.time_ns - origin_ns) / 1e9,
        "peak_step": _step_at(peak.time_ns, steps),
        "peak_operator": peak.operator,
        "final_bytes": levels[-1],
        "allocations": sum(1 for record in records if record.nbytes > 0),
        "timeline": _timeline([(r.time_ns - origin_ns) / 1e9 for r in records], levels),
        "held_at_peak": held_at(records[: peak_index + 1]) if paired else [],
        "held_known": paired,
    }


def _step_at(time_ns: int, steps: Sequence[StepSpan]) -> str | None:
    for step in steps:
        if step.start_ns <= time_ns <= step.end_ns:
            return step.name
    return None


def _timeline(seconds: list[float], levels: list[int]) -> list[list[float]]:
    """At most TIMELINE_POINTS points: the highest of each stretch, at its time."""
    if len(levels) <= TIMELINE_POINTS:
        return [[t, level] for t, level in zip(seconds, levels, strict=True)]
    points = []
    size = len(levels) / TIMELINE_POINTS
    for bucket in range(TIMELINE_POINTS):
        low, high = int(bucket * size), int((bucket + 1) * size)
        top = max(range(low, max(high, low + 1)), key=levels.__getitem__)
        points.append([seconds[top], levels[top]])
    points.append([seconds[-1], levels[-1]])  # the end's level, as the rows' net bytes sum
    return points


def held_at(records: Sequence[Allocation]) -> list[HeldAtPeak]:
    """What ``records`` leave allocated (made among them, not freed among them), by
    the op and shapes that made it and the allocation's size, largest first (one op
    making a 4 MB and a 512 B tensor is two lines: the size says which is which)."""
    live: dict[int, Allocation] = {}
    for record in records:
        if record.nbytes > 0:
            live[record.ptr] = record
        else:
            live.pop(record.ptr, None)  # a free of memory made before the window: not held
    groups: dict[tuple[str, str, int], HeldAtPeak] = {}
    for record in live.values():
        key = (record.operator or "(outside any operator)", str(record.shapes), record.nbytes)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "operator": key[0], "input_shapes": record.shapes, "size": record.nbytes,
                "bytes": 0, "count": 0,
            }  # fmt: skip
        group["bytes"] += record.nbytes
        group["count"] += 1
    return sorted(groups.values(), key=lambda group: -group["bytes"])[:HELD_ROWS]


def memory_lines(memory: Mapping[str, Any] | None) -> list[str]:
    """``memory: cpu allocator peak +3.8 MiB at step 4 in aten::ones; held: ...``, a line
    per device (headless, the text summary); none without a memory block."""
    lines = []
    for device in (memory or {}).get("devices") or []:
        where = []
        if device.get("peak_step") is not None:
            where.append(f"at step {device['peak_step']}")
        if device.get("peak_operator"):
            where.append(f"in {device['peak_operator']}")
        line = (
            f"memory: {device['device']} allocator peak "
            f"{format_bytes(device['peak_bytes'], signed=True)} {' '.join(where)}"
        ).rstrip()
        held = device.get("held_at_peak") or []
        if held:
            top = held[0]
            line += (
                f"; held then: {top['operator']} {format_shapes(top['input_shapes'] or [])}"
                f" {format_bytes(top['bytes'])}"
            )
        lines.append(line)  # fmt: skip
    lines += category_lines((memory or {}).get("categories"))
    return lines


MEMORY_COLUMNS = ("device", "what", "operator", "input_shapes", "bytes", "size", "count")


def memory_rows(memory: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The memory view's tables as rows to export (``e`` in M): what each allocator held
    at the window's peak, then each category's bytes at the traced step's peak."""
    rows: list[dict[str, Any]] = []
    for device in (memory or {}).get("devices") or []:
        for held in device.get("held_at_peak") or []:
            rows.append({
                "device": device["device"], "what": "held at the window's peak",
                "operator": held["operator"], "input_shapes": held["input_shapes"],
                "bytes": held["bytes"], "size": held["size"], "count": held["count"],
            })  # fmt: skip
    for device in ((memory or {}).get("categories") or {}).get("devices") or []:
        for name, size in zip(device["categories"], device["at_peak"], strict=False):
            rows.append({"device": device["device"], "what": "category at the traced step's peak",
                         "operator": name, "input_shapes": None, "bytes": size, "size": None,
                         "count": None})  # fmt: skip
    return rows


def category_lines(categories: Mapping[str, Any] | None) -> list[str]:
    """``memory by category: cpu at the step's peak 12.3 MiB: activation 8.8 MiB, ...``
    (the step after the window, torch's memory profiler), a line per device."""
    lines = []
    for device in (categories or {}).get("devices") or []:
        named = sorted(zip(device["categories"], device["at_peak"], strict=False),
                       key=lambda item: -item[1])  # fmt: skip
        parts = ", ".join(f"{name} {format_bytes(size)}" for name, size in named if size > 0)
        lines.append(
            f"memory by category: {device['device']} at the traced step's peak "
            f"{format_bytes(device['peak_bytes'])}: {parts}"
        )
    return lines


def device_peak_words(context: Mapping[str, Any] | None) -> str | None:
    """``device peak 3.2 GiB allocated, 3.5 GiB reserved (the window's)``; None where
    there is no device allocator (a CPU run) or the report has no such figure."""
    figures = (context or {}).get("device_peak")
    if not isinstance(figures, Mapping) or figures.get("allocated_bytes") is None:
        return None
    words = f"device peak {format_bytes(figures['allocated_bytes'])} allocated"
    if figures.get("reserved_bytes") is not None:
        words += f", {format_bytes(figures['reserved_bytes'])} reserved"
    return words + " (the window's)"
