"""The summaries above the rows, made in one place for traces and live windows: the step
overview (the TensorBoard plugin's), the device timeline's breakdown (HTA's) and the
collective kernels' starts a cross-rank view compares (HTA's straggler evidence)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan_tui.analysis.device_timeline import collective_starts, temporal_breakdown
from torchscan_tui.analysis.overview import step_overview
from torchscan_tui.analysis.profiler_events import EventColumns
from torchscan_tui.analysis.records import Overview
from torchscan_tui.analysis.step_model import Steps


def summaries(
    columns: EventColumns,
    steps: Steps,
    kernels: Sequence[Mapping[str, Any]] = (),
    rows: Sequence[Mapping[str, Any]] = (),
) -> Overview | None:
    """A report's ``overview`` block: None when the profile has no step."""
    overview = step_overview(columns, steps, kernels, rows)
    if overview is None:
        return None
    overview["device_timeline"] = temporal_breakdown(columns, steps)
    starts = collective_starts(columns, steps.steps)
    if starts:
        overview["collective_starts"] = starts
    return overview
