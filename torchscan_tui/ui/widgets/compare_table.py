"""The compare table: the operator table's line rendering over before/after rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.binding import Binding

from torchscan_tui.analysis.compare import PRESENCE_MARKS, side_seconds
from torchscan_tui.common.formatting import format_ratio, format_signed_seconds, shapes_text
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.widgets.operator_table import MOVEMENT_BINDINGS, OperatorTable
from torchscan_tui.ui.widgets.table_columns import Column

COMPARE_COLUMNS = (
    Column("mark", "", 1),
    Column("presence", "", 4, cell=lambda cell: PRESENCE_MARKS.get(cell.row["presence"], "")),
    Column("operator", "operator", 0, weight=5, min_width=16,
           cell=lambda cell: neutralise_controls(cell.row["operator"])),
    Column("shapes", "input shapes", 0, weight=6, min_width=12,
           cell=lambda cell: neutralise_controls(shapes_text(cell.row))),
    Column("before", "CPU before", 11, "right",
           cell=lambda cell: side_seconds(cell.row, "cpu_self_seconds", "before")),
    Column("after", "CPU after", 11, "right",
           cell=lambda cell: side_seconds(cell.row, "cpu_self_seconds", "after")),
    Column("delta", "CPU delta", 11, "right", sort="delta",
           cell=lambda cell: format_signed_seconds(cell.row["cpu_self_seconds"]["delta"])),
    Column("ratio", "ratio", 7, "right", sort="ratio",
           cell=lambda cell: format_ratio(cell.row["cpu_self_seconds"]["ratio"])),
    Column("device", "device delta", 12, "right", sort="device",
           cell=lambda cell: format_signed_seconds(cell.row["device_self_seconds"]["delta"])),
    Column("calls", "calls", 9, "right", sort="calls",
           cell=lambda cell: f"{cell.row['calls']['before']}→{cell.row['calls']['after']}"),
    Column("share", "|delta|", 10, cell=lambda cell: cell.share),
)  # fmt: skip
COMPARE_DROP_ORDER = ("share", "calls", "device", "before", "after", "ratio", "presence")


class CompareTable(OperatorTable, inherit_bindings=False):
    """Rows are compare rows (see :mod:`torchscan_tui.analysis.compare`); the bar is |CPU delta|."""

    # k moves up here, as its help says: no kernel view to open (the profile's k).
    BINDINGS = [*MOVEMENT_BINDINGS, Binding("k", "cursor(-1)", "Up", show=False)]

    TABLE_COLUMNS = COMPARE_COLUMNS
    TABLE_DROP_ORDER = COMPARE_DROP_ORDER

    def share_of(self, row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        delta = row["cpu_self_seconds"]["delta"]
        if self.share_total and delta is not None:
            return delta, abs(delta) / self.share_total
        return delta, None
