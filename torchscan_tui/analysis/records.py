"""The row vocabulary, written once: what an operator row, a kernel row and a note hold.

Rows are made here in :mod:`torchscan_tui.analysis` (ranking, the device summary, the
per-step figures), so their types live here too; :mod:`torchscan_tui.formats.report_schema`
checks files from outside against the same ``TypedDict``s, and the channel's decoder
does too. Fields not listed are kept as they are.
"""

from __future__ import annotations

from typing import TypedDict

# An input shape: a tensor's dims, a scalar's [], a TensorList's list of dims (2 deep),
# and one level more for safety. Deeper nesting is no shape a profiler writes.
Shape = list[int | list[int | list[int | list[int]]]]


class Note(TypedDict):
    code: str
    message: str


class _RowRequired(TypedDict):
    operator: str
    input_shapes: list[Shape]
    calls: int
    cpu_self_seconds: float
    device_self_seconds: float | None
    cpu_net_bytes: int


class _StepSpreadRequired(TypedDict):
    min: float
    median: float
    max: float
    steps: int


class StepSpread(_StepSpreadRequired, total=False):
    """A row's CPU self time per step over a window (see analysis/step_summary.py)."""

    mean: float


class Row(_RowRequired, total=False):
    """One operator row (see :mod:`torchscan_tui.analysis.ranking`)."""

    kind: str
    callers: dict[str, int]
    diagnostics: list[Note]
    cpu_self_seconds_per_step: StepSpread


class _KernelRequired(TypedDict):
    kernel: str
    operator: str
    calls: int
    total_seconds: float
    mean_seconds: float
    min_seconds: float
    max_seconds: float


class KernelRow(_KernelRequired, total=False):
    """One row of the kernel view (see :mod:`torchscan_tui.analysis.device_summary`)."""

    activity: str
    direction: str | None


__all__ = ["KernelRow", "Note", "Row", "Shape", "StepSpread"]
