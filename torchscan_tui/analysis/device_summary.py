"""The device part of a report: totals, the kernel view and the notes that qualify them.

Both the live profile and the trace importer build it from one
:class:`~torchscan_tui.analysis.aggregate.Aggregation`, so a trace reopened later reads exactly
as the run that wrote it (pure: no torch, no textual).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from torchscan_tui.analysis.attribution import UNATTRIBUTED_REASONS, KernelGroup
from torchscan_tui.analysis.diagnostics import make
from torchscan_tui.analysis.records import KernelRow, Note
from torchscan_tui.common.formatting import format_seconds

if TYPE_CHECKING:  # grouping's import: a few ms of every start, for a type
    from torchscan_tui.analysis.aggregate import Aggregation

NANOSECONDS = 1e9


class DeviceContext(TypedDict):
    """The context fields :func:`device_context` fills."""

    device_kind: str | None
    device_seconds_total: float | None
    device_seconds_attributed: float | None


def device_context(aggregation: Aggregation, measured: bool) -> DeviceContext:
    """Context fields: the device kind and its total time, and how much reached an op.

    Totals are None where device time was not measured (a CPU profile), never 0.
    """
    if not measured:
        return {
            "device_kind": None,
            "device_seconds_total": None,
            "device_seconds_attributed": None,
        }
    unattributed = sum(aggregation.unattributed_ns.values())
    return {
        "device_kind": aggregation.device_kind,
        "device_seconds_total": aggregation.device_ns / NANOSECONDS,
        "device_seconds_attributed": (aggregation.device_ns - unattributed) / NANOSECONDS,
    }


def kernel_row(group: KernelGroup) -> KernelRow:
    """One row of the report's ``kernels`` block (times in seconds)."""
    return {
        "kernel": group.name,
        "operator": group.operator,
        "activity": group.activity,
        "direction": group.direction,
        "calls": group.calls,
        "total_seconds": group.total_ns / NANOSECONDS,
        "mean_seconds": group.total_ns / group.calls / NANOSECONDS,
        "min_seconds": group.min_ns / NANOSECONDS,
        "max_seconds": group.max_ns / NANOSECONDS,
    }


def kernel_rows(aggregation: Aggregation) -> list[KernelRow]:
    """The kernel view, largest total first."""
    return [kernel_row(group) for group in aggregation.kernels]


def _milliseconds(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"


def device_diagnostics(
    aggregation: Aggregation, set_apart: dict[str, int] | None = None
) -> list[Note]:
    """Notes on device time that could not be attributed, or was left out, and why."""
    notes = []
    unattributed = sum(aggregation.unattributed_ns.values())
    if unattributed:
        reasons = "; ".join(
            f"{_milliseconds(aggregation.unattributed_ns[name])} on the row '{name}': {why}"
            for name, why in UNATTRIBUTED_REASONS.items()
            if name in aggregation.unattributed_ns
        )
        share = 100 * unattributed / aggregation.device_ns
        notes.append(
            make(
                "device_time_unattributed",
                f"{_milliseconds(unattributed)} of {_milliseconds(aggregation.device_ns)} of "
                f"device time ({share:.1f}%) reached no operator: {reasons}.",
            )
        )
    if aggregation.device_annotations:
        notes.append(
            make(
                "device_annotations_not_summed",
                f"{aggregation.device_annotations:,} ranges drawn on the device timeline "
                "(gpu_user_annotation) span kernels already counted: they are not added to "
                "any operator's device time.",
            )
        )
    if set_apart:
        listed = ", ".join(f"{category or '(none)'}: {count:,}" for category, count in
                           sorted(set_apart.items()))  # fmt: skip
        notes.append(
            make(
                "events_set_apart",
                f"Events of categories that are neither operators nor device work were left "
                f"out of every row, not counted as CPU or device time ({listed}): waits "
                "such as cuda_sync, and categories this version cannot place.",
            )
        )
    return notes


def device_line(context: Mapping[str, Any]) -> str | None:
    """``cuda, 603.558 ms device time (98.2% attributed to operators)``: the device totals
    in a few words, for headers and summaries; None for a profile without device time."""
    total = context.get("device_seconds_total")
    if total is None:
        return None
    kind = context.get("device_kind") or context.get("device") or "device"
    attributed = context.get("device_seconds_attributed")
    line = f"{kind}, {format_seconds(total)} device time"
    if total and attributed is not None:
        line += f" ({100 * attributed / total:.1f}% attributed to operators)"
    return line
