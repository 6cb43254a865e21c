"""The summaries above the rows, made in one place for traces and live windows: the step
overview (the TensorBoard plugin's), the device timeline's breakdown (HTA's) and the
collective kernels' starts a cross-rank view compares (HTA's straggler evidence).

All of it comes from the event columns but the overview's recommendations, which cite
the rows and the kernel view: :func:`column_summaries` is the part a trace's reader can
compute while the rows are being grouped, :func:`finished` adds the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torchscan_tui.analysis.device_timeline import collective_starts, temporal_breakdown
from torchscan_tui.analysis.overview import StepSplit, advised, step_split
from torchscan_tui.analysis.profiler_events import EventColumns
from torchscan_tui.analysis.records import CollectiveStarts, DeviceTimeline, Overview
from torchscan_tui.analysis.step_model import Steps


@dataclass(frozen=True)
class ColumnSummaries:
    """What the event columns alone give of a report's ``overview`` block."""

    split: StepSplit
    device_timeline: DeviceTimeline | None
    collective_starts: dict[str, CollectiveStarts]


def summaries(
    columns: EventColumns,
    steps: Steps,
    kernels: Sequence[Mapping[str, Any]] = (),
    rows: Sequence[Mapping[str, Any]] = (),
) -> Overview | None:
    """A report's ``overview`` block: None when the profile has no step."""
    return finished(column_summaries(columns, steps), kernels, rows)


def column_summaries(columns: EventColumns, steps: Steps) -> ColumnSummaries | None:
    """The overview's part from the event columns alone; None when the profile has no step."""
    split = step_split(columns, steps)
    if split is None:
        return None
    timeline = temporal_breakdown(columns, steps)
    return ColumnSummaries(split, timeline, collective_starts(columns, steps.steps))


def finished(
    part: ColumnSummaries | None,
    kernels: Sequence[Mapping[str, Any]] = (),
    rows: Sequence[Mapping[str, Any]] = (),
) -> Overview | None:
    """The ``overview`` block from its columns' part, with the recommendations, which
    cite ``kernels`` (the kernel view) and ``rows`` (the operator rows)."""
    if part is None:
        return None
    overview = advised(part.split, kernels, rows)
    overview["device_timeline"] = part.device_timeline
    if part.collective_starts:
        overview["collective_starts"] = part.collective_starts
    return overview
