"""Each row's CPU self time step by step: the window's events grouped one step at a time.

The worker calls :func:`attach_step_spreads` once a window's rows are ranked; the figures
are read back by :mod:`.step_summary` (which the app imports at start-up, so the grouping
it needs is kept here).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.profiler_events import RawEvent
from torchscan_tui.analysis.ranking import build_rows
from torchscan_tui.analysis.records import Row


def _row_key(row: Row) -> tuple:
    return row["operator"], repr(row["input_shapes"]), row.get("kind")


def attach_step_spreads(rows: list[Row], steps: Sequence[Sequence[RawEvent]]) -> None:
    """Each row's CPU self time in each step (grouped step by step, as the window is),
    as ``{"min", "median", "max", "steps"}`` under :data:`PER_STEP`."""
    per_step = []
    for events in steps:
        step_rows, _ = build_rows(aggregate_events(events).groups, device_measured=False)
        per_step.append({_row_key(row): row["cpu_self_seconds"] for row in step_rows})
    if not per_step:
        return
    for row in rows:
        key = _row_key(row)
        seconds = [step.get(key, 0.0) for step in per_step]
        row["cpu_self_seconds_per_step"] = {  # PER_STEP
            "mean": statistics.fmean(seconds),
            "min": min(seconds),
            "median": statistics.median(seconds),
            "max": max(seconds),
            "steps": len(seconds),
        }
