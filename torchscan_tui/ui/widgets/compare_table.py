"""The compare table: the operator table's line rendering over before/after rows."""

from __future__ import annotations

from torchscan_tui.analysis.compare import PRESENCE_MARKS, side_seconds
from torchscan_tui.common.formatting import format_ratio, format_signed_seconds, shapes_text
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.widgets.operator_table import MOVEMENT_BINDINGS, Column, OperatorTable

COMPARE_COLUMNS = (
    Column("mark", "", 1),
    Column("presence", "", 4, drop_order=1),
    Column("operator", "operator", 0, weight=5, min_width=16),
    Column("shapes", "input shapes", 0, weight=6, min_width=12),
    Column("before", "CPU before", 11, "right", drop_order=3),
    Column("after", "CPU after", 11, "right", drop_order=3),
    Column("delta", "CPU delta", 11, "right"),
    Column("ratio", "ratio", 7, "right", drop_order=2),
    Column("device", "device delta", 12, "right", drop_order=4),
    Column("calls", "calls", 9, "right", drop_order=5),
    Column("share", "|delta|", 10, drop_order=6),
)
COMPARE_SORT_COLUMNS = {"delta": "delta", "ratio": "ratio", "device": "device", "calls": "calls"}


class CompareTable(OperatorTable, inherit_bindings=False):
    """Rows are compare rows (see :mod:`torchscan_tui.analysis.compare`); the bar is |CPU delta|."""

    BINDINGS = MOVEMENT_BINDINGS

    TABLE_COLUMNS = COMPARE_COLUMNS
    SORT_COLUMNS = COMPARE_SORT_COLUMNS

    def build_cells(self, row_id: int, row: dict) -> dict:
        cpu, device, calls = row["cpu_self_seconds"], row["device_self_seconds"], row["calls"]
        share = None
        if self.share_total and cpu["delta"] is not None:
            share = abs(cpu["delta"]) / self.share_total
        return {
            "presence": PRESENCE_MARKS.get(row["presence"], ""),
            "operator": neutralise_controls(row["operator"]),
            "shapes": neutralise_controls(shapes_text(row)),
            "before": side_seconds(row, "cpu_self_seconds", "before"),
            "after": side_seconds(row, "cpu_self_seconds", "after"),
            "delta": format_signed_seconds(cpu["delta"]),
            "ratio": format_ratio(cpu["ratio"]),
            "device": format_signed_seconds(device["delta"]),
            "calls": f"{calls['before']}→{calls['after']}",
            "share": share,
        }
