"""Turn aggregated groups into ranked report rows (pure: no torch, no textual)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from torchscan_tui.analysis.records import Row
from torchscan_tui.analysis.sites import site_rows

if TYPE_CHECKING:  # grouping's import: a few ms of every start, for a type
    from torchscan_tui.analysis.groups import Group

NANOSECONDS = 1e9


def achieved_flops(flops: int | None, seconds: float | None) -> float | None:
    """FLOP/s: the op's FLOPs over its inclusive time (device time where measured: the
    kernels did the arithmetic; else CPU), None where either is unknown or zero."""
    if not flops or not seconds:
        return None
    return flops / seconds


def group_to_row(group: Group, *, device_measured: bool) -> Row:
    """One report row. Device time is None when it was not measured, never a made-up 0."""
    cpu_total = group.cpu_total_ns / NANOSECONDS
    device_total = group.device_total_ns / NANOSECONDS if device_measured else None
    row: Row = {
        "operator": group.operator,
        "input_shapes": group.input_shapes,
        "kind": group.kind,
        "calls": group.calls,
        "cpu_self_seconds": group.cpu_self_ns / NANOSECONDS,
        "device_self_seconds": group.device_self_ns / NANOSECONDS if device_measured else None,
        "cpu_net_bytes": group.cpu_net_bytes,
        "cpu_total_seconds": cpu_total,
        "device_total_seconds": device_total,
        "flops": group.flops,
        "flops_per_second": achieved_flops(group.flops, device_total or cpu_total),
        "callers": dict(sorted(group.callers.items(), key=lambda item: -item[1])),
        "diagnostics": [],
    }
    if group.sites:
        row["sites"] = site_rows(group.sites, group.cpu_self_ns)
    return row


def rank_key(row: Row, by_device: bool) -> tuple:
    device = row["device_self_seconds"] or 0.0
    primary = device if by_device else row["cpu_self_seconds"]
    return (-primary, -row["cpu_self_seconds"], row["operator"], str(row["input_shapes"]))


def build_rows(groups: Iterable[Group], *, device_measured: bool) -> tuple[list[Row], str]:
    """Rows ranked by device self time where it was measured, else by CPU self time."""
    rows = [group_to_row(group, device_measured=device_measured) for group in groups]
    ranking = "device_self_seconds" if device_measured else "cpu_self_seconds"
    rows.sort(key=lambda row: rank_key(row, device_measured))
    return rows, ranking


class SelfTimeSums(TypedDict):
    cpu_self_seconds_sum: float | None
    device_self_seconds_sum: float | None


def self_time_sums(rows: Sequence[Mapping[str, Any]]) -> SelfTimeSums:
    """Sums of self time over every row: denominators for shares, never a latency. None
    where nothing was measured: no rows (an empty profile sums to no time, not to 0), or
    a row without device time."""
    if not rows:
        return {"cpu_self_seconds_sum": None, "device_self_seconds_sum": None}
    device = [row["device_self_seconds"] for row in rows]
    return {
        "cpu_self_seconds_sum": sum(row["cpu_self_seconds"] for row in rows),
        "device_self_seconds_sum": None if any(d is None for d in device) else sum(device),
    }
