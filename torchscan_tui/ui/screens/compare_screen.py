"""``torchscan-tui --compare BEFORE AFTER``: one row per operator and shape, before vs
after.

Sorted by the CPU self-time change: the largest slowdown first, and ``d`` again the
largest speedup first (the text table ``--compare`` prints lists the largest changes
either way first: one list, no keys to flip it); rows found on one side only are
marked ``new`` or ``gone``. ``o`` matches rows by operator alone (each side's shapes
merged), and back: a model whose shapes changed still compares.
Filter, selection and export work as on the profile screen (both are a
:class:`~torchscan_tui.ui.screens.rows_screen.RowsScreen`).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding

from torchscan_tui.analysis.compare import COMPARE_SORTS, FLAT_COLUMNS, flat_row
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.analysis.shares import FIELD_LABELS, chart_fields, delta_bars
from torchscan_tui.analysis.sorting import Sort
from torchscan_tui.common.formatting import counted
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.rows_screen import (
    FILTER_BINDINGS,
    HELP_BINDING,
    LEAVE_BINDING,
    NOISE_BINDING,
    QUIT_BINDING,
    SELECTION_BINDINGS,
    RowsScreen,
)
from torchscan_tui.ui.widgets.charts import delta_chart
from torchscan_tui.ui.widgets.compare_heading import CompareHeading
from torchscan_tui.ui.widgets.compare_table import CompareTable
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.key_footer import KeyFooter
from torchscan_tui.ui.widgets.status_bar import RowCounts, StatusBar

HELP_NOTES = [
    ("↑ ↓ j k, pgup pgdn, home end", "move"),
    ("/ words", "filter: words, -word, a|b, *norm*, [8, 64], 8x64, [*, 64], kind:runtime"),
    ("ctrl+p", "command palette: every action by name"),
    ("mouse", "click a row to highlight it, click a column's title to sort by it"),
    ("new / gone", "the row exists only after / only before"),
    ("—", "no figure on that side: the row does not exist there, or was not measured"),
]


class CompareScreen(RowsScreen):
    """The header of both runs' totals, the compare table, its status and keys."""

    BINDINGS = [
        HELP_BINDING,
        *FILTER_BINDINGS,
        Binding("d", "sort('delta')", "Delta", tooltip="Sort by CPU self-time delta"),
        Binding("percent_sign", "sort('ratio')", "Ratio", tooltip="Sort by after/before ratio"),
        Binding("g", "sort('device')", "Device", tooltip="Sort by device self-time delta"),
        Binding("n", "sort('calls')", "Calls", tooltip="Sort by change in calls"),
        NOISE_BINDING,
        *SELECTION_BINDINGS,
        Binding(
            "o",
            "toggle_by_operator",
            "By op",
            tooltip="Match rows by operator alone (shapes merged), or by operator and shapes",
        ),
        Binding("b", "chart", "Chart", tooltip="Bars: the rows that moved most"),
        Binding("e", "export_rows", "Export", tooltip="Export selected compare rows"),
        QUIT_BINDING,
        LEAVE_BINDING,
    ]
    HELP_NOTES = HELP_NOTES

    def __init__(self, diff: dict, rediff: Callable[[str], dict] | None = None):
        """``rediff(by)`` compares the two runs again, matched by "shape" or "operator"
        (None: this compare cannot be redone, and ``o`` is not offered)."""
        super().__init__()
        self.diff = diff
        self.rediff = rediff
        self.view = RowView(
            list(diff["rows"]), sort=Sort("delta", True), sort_getters=COMPARE_SORTS
        )

    def compose(self) -> ComposeResult:
        yield CompareHeading(self.diff, id="run-header")
        yield FilterBar(id="filter-bar")
        yield CompareTable(self.view, id="operator-table")
        yield StatusBar(id="status-bar")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self._show_rows()
        self.watch_filter_input()
        self.table.focus()
        self.render_status()

    def _show_rows(self) -> None:
        deltas = [abs(row["cpu_self_seconds"]["delta"] or 0.0) for row in self.view.rows]
        self.table.set_share("cpu_self_seconds", max(deltas, default=0.0) or None)
        self.table.view_changed(rows_replaced=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_by_operator":
            return self.rediff is not None
        return super().check_action(action, parameters)

    def action_toggle_by_operator(self) -> None:
        """o: compare again by operator alone, or back by operator and shapes; the filter
        and sort stay, the selection (of rows that no longer exist) goes."""
        if self.rediff is None:
            return
        by = "shape" if self.diff.get("by") == "operator" else "operator"
        self.diff = self.rediff(by)
        self.view.set_rows(list(self.diff["rows"]))
        self.query_one(CompareHeading).diff = self.diff
        self._show_rows()
        self.render_status()
        self.notify(
            "rows matched by operator alone, each side's shapes merged" if by == "operator"
            else "rows matched by operator and input shapes",
            title="Compare",
        )  # fmt: skip

    def render_status(self) -> None:
        self.query_one(StatusBar).status = RowCounts(
            shown=len(self.view.visible),
            received=len(self.view.rows),
            total=len(self.view.rows),
            filter_text=self.view.filter.text,
            sort_label=self.view.sort.describe(),
            selected=len(self.view.selected),
            noise_hidden=self.view.hide_noise,
        )

    def action_sort(self, key: str) -> None:
        self.view.set_sort(self.view.sort.toggled(key))
        self.table.view_changed()
        self.table.refresh()
        self.render_status()

    def action_chart(self) -> None:
        """Diverging bars of the shown compare rows that moved most."""
        from torchscan_tui.ui.screens.chart_screen import ChartScreen

        rows = self.view.visible_rows()
        fields = chart_fields({"d": "cpu_self_seconds", "g": "device_self_seconds"})

        def draw(field_name: str, width: int) -> RenderableType:
            return delta_chart(delta_bars(rows, field_name), FIELD_LABELS[field_name], width,
                               palette_of(self.app))  # fmt: skip

        start = "g" if self.view.sort.key == "device" else "d"
        self.app.push_screen(ChartScreen(f"What moved ({len(rows):,} rows)", fields, draw, start))

    def action_export_rows(self) -> None:
        rows = [flat_row(row) for row in self.view.rows_to_export(self.table.cursor)]
        self.ask_to_export_rows(
            "Export compare rows",
            "torchscan-compare.csv",
            f"Exports {counted(len(rows), 'compare row')}: .csv, .json or .md.",
            rows,
            counted(len(rows), "row"),
            FLAT_COLUMNS,
        )
