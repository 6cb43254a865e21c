"""``torchscan-tui --compare BEFORE AFTER``: one row per operator and shape, before vs after.

Sorted by CPU self-time delta (largest regression first); rows found on one side only are
marked ``new`` or ``gone``. The filter, selection and export keys work as in the main app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from torchscan_tui.analysis.compare import COMPARE_SORTS, FLAT_COLUMNS, flat_row
from torchscan_tui.analysis.rows import RowView, Sort
from torchscan_tui.analysis.shares import FIELD_LABELS, chart_fields, delta_bars
from torchscan_tui.common.formatting import format_bytes, format_seconds
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.exporting import Exporting
from torchscan_tui.ui.literal import LiteralNotices
from torchscan_tui.ui.row_browsing import FILTER_BINDINGS, SELECTION_BINDINGS, RowBrowsing
from torchscan_tui.ui.screens.chart_screen import ChartScreen
from torchscan_tui.ui.screens.help_screen import HelpScreen
from torchscan_tui.ui.widgets.charts import delta_chart
from torchscan_tui.ui.widgets.compare_table import CompareTable
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.key_footer import KeyFooter
from torchscan_tui.ui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    pass

COMPARE_KEYS = [
    ("/", "filter (escape leaves): words, [8, 64], 8x64, [*, 64], kind:runtime"),
    ("d / o / g / n", "sort by CPU delta / ratio / device delta / calls change; again flips"),
    ("↑ ↓ j k, pgup pgdn, home end", "move"),
    ("space / a", "select the row / select all visible rows"),
    ("b", "bar chart of the largest changes, faster left, slower right (d / g switch)"),
    ("e", "export the selected compare rows (or the highlighted one)"),
    ("q, F10", "quit"),
    ("?, F1", "this help"),
    ("mouse", "click a row to highlight it, click a column's title to sort by it"),
    ("new / gone", "the row exists only after / only before"),
]


class CompareApp(RowBrowsing, Exporting, LiteralNotices, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "torchscan-tui compare"
    BINDINGS = [
        # Help first: a narrow terminal's footer cuts its last keys off.
        Binding("question_mark,f1", "help", "Help", tooltip="Keys"),
        *FILTER_BINDINGS,
        Binding("d", "sort('delta')", "Delta", tooltip="Sort by CPU self-time delta"),
        Binding("o", "sort('ratio')", "Ratio", tooltip="Sort by after/before ratio"),
        Binding("g", "sort('device')", "Device", tooltip="Sort by device self-time delta"),
        Binding("n", "sort('calls')", "Calls", tooltip="Sort by change in calls"),
        *SELECTION_BINDINGS,
        Binding("b", "chart", "Chart", tooltip="Bars: the rows that moved most"),
        Binding("e", "export_rows", "Export", tooltip="Export selected compare rows"),
        Binding("q,f10", "quit", "Quit", tooltip="Quit"),
        Binding("escape", "leave", "Back", show=False),
    ]

    def __init__(self, diff: dict):
        super().__init__()
        self.diff = diff
        self.view = RowView(
            list(diff["rows"]), sort=Sort("delta", True), sort_getters=COMPARE_SORTS
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_filter":
            return self.filter_key_applies()
        if action == "clear_filter":
            return self.clear_filter_applies()
        return True

    def compose(self) -> ComposeResult:
        yield Static(self._summary(), id="run-header")
        yield FilterBar(id="filter-bar")
        yield CompareTable(self.view, id="operator-table")
        yield StatusBar(id="status-bar")
        yield KeyFooter(compact=True)

    def _summary(self) -> Text:
        total = self.diff["totals"]["cpu_self_seconds"]
        text = Text()
        text.append(" compare ", style="bold reverse")
        text.append(
            f" {neutralise_controls(str(self.diff['before']))} → "
            f"{neutralise_controls(str(self.diff['after']))}  ",
            style="bold",
        )
        text.append(
            f"CPU self {format_seconds(total['before'])} → {format_seconds(total['after'])}",
            style="dim",
        )
        rss = self.diff["totals"].get("process_peak_rss") or {}
        if rss.get("before") is not None or rss.get("after") is not None:
            text.append(
                f"  peak RSS {format_bytes(rss.get('before'))} → {format_bytes(rss.get('after'))}",
                style="dim",
            )
        device = self.diff["totals"]["device_self_seconds"]
        if device["before"] is not None or device["after"] is not None:
            text.append(
                f"  device self {format_seconds(device['before'])} → "
                f"{format_seconds(device['after'])}",
                style="dim",
            )
        return text

    @property
    def table(self) -> CompareTable:
        return self.query_one(CompareTable)

    def on_mount(self) -> None:
        deltas = [abs(row["cpu_self_seconds"]["delta"] or 0.0) for row in self.view.rows]
        self.table.set_share("cpu_self_seconds", max(deltas, default=0.0) or None)
        self.table.view_changed(rows_replaced=True)
        self.watch_filter_input()
        self.table.focus()
        self._render_status()

    def _render_status(self) -> None:
        label = self.view.sort.describe()
        self.query_one(StatusBar).show(
            shown=len(self.view.visible),
            received=len(self.view.rows),
            total=len(self.view.rows),
            row_limit=None,
            filter_text=self.view.filter.text,
            sort_label=label,
            selected=len(self.view.selected),
        )

    def action_leave(self) -> None:
        if isinstance(self.focused, Input):
            self.table.focus()

    def action_sort(self, key: str) -> None:
        self.view.set_sort(self.view.sort.toggled(key))
        self.table.view_changed()
        self.table.refresh()
        self._render_status()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(COMPARE_KEYS))

    def action_chart(self) -> None:
        """Diverging bars of the shown compare rows that moved most."""
        rows = self.view.visible_rows()
        fields = chart_fields({"d": "cpu_self_seconds", "g": "device_self_seconds"})

        def draw(field_name: str, width: int) -> RenderableType:
            return delta_chart(delta_bars(rows, field_name), FIELD_LABELS[field_name], width)

        start = "g" if self.view.sort.key == "device" else "d"
        self.push_screen(ChartScreen(f"What moved ({len(rows):,} rows)", fields, draw, start))

    def action_export_rows(self) -> None:
        rows = [flat_row(row) for row in self.view.rows_to_export(self.table.cursor)]
        self.ask_to_export_rows(
            "Export compare rows",
            "torchscan-compare.csv",
            f"Exports {len(rows)} compare row(s): .csv, .json or .md.",
            rows,
            f"{len(rows)} row(s)",
            FLAT_COLUMNS,
        )
