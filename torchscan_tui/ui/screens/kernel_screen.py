"""``k``: the kernel view, device work grouped by kernel and the operator that launched it.

Kernels, memcpy and memset (with their direction) from the report's ``kernels`` block:
calls, total, mean, min and max duration. Filter with ``/``, sort with ``t n a x``,
export the shown rows with ``e``. Every name is outside text: shown literally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from torchscan_tui.analysis.filtering import FilterError
from torchscan_tui.analysis.kernel_view import kernel_view, set_kernel_filter
from torchscan_tui.analysis.records import KernelRow
from torchscan_tui.common.formatting import format_count, format_seconds
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.literal import NO_CONTROLS, literal
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.rows_screen import binding_commands
from torchscan_tui.ui.widgets.fitted_data_table import FittedDataTable
from torchscan_tui.ui.widgets.table_columns import Column

# Long C++ kernel names are cut (the whole name is in the export); the names share the
# width the figures leave them, and on a narrow terminal the figures least needed go
# first, never the sorted one (ui/widgets/fitted_data_table.py).
COLUMNS = (
    Column("kernel", "kernel", 0, weight=3, min_width=24),
    Column("operator", "launched by", 0, weight=2, min_width=16),
    Column("what", "what", 12),
    Column("calls", "calls", 8),
    Column("total", "total", 11),
    Column("mean", "mean", 11),
    Column("min", "min", 11),
    Column("max", "max", 11),
)
DROP_ORDER = ("min", "max", "what", "mean", "calls")
SORT_LABELS = {"total": "total", "calls": "calls", "mean": "mean", "max": "max"}

ExportRows = Callable[[list[KernelRow]], None]


def _literal(value: object, style: str = "") -> Text:
    """Outside text as a cell: never markup, controls made visible, cut to one line."""
    return literal(value, style, one_line=True)


def _what(row: Mapping[str, Any]) -> str:
    direction = row.get("direction")
    if direction == "memset":
        return "memset"
    if direction:
        return f"memcpy {direction}"
    return str(row.get("activity") or "kernel")


FILTER_HINT = "/ filter kernels: words, -word, a|b, *glob* in name, operator, htod"


class KernelScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,k,q", "close", "Back", tooltip="Back to the operators"),
        Binding(
            "slash", "focus_filter", "Filter", tooltip="Filter kernels by words", priority=True
        ),
        Binding("t", "sort('total')", "Total", tooltip="Sort by total time; again flips"),
        Binding("n", "sort('calls')", "Calls", tooltip="Sort by calls"),
        Binding("a", "sort('mean')", "Mean", tooltip="Sort by mean time per call"),
        Binding("x", "sort('max')", "Max", tooltip="Sort by the longest call"),
        Binding("e", "export", "Export", tooltip="Export the kernels shown"),
    ]

    def __init__(self, kernels: Sequence[KernelRow], summary: str, export: ExportRows):
        super().__init__()
        self.kernels = kernels
        self.summary = summary
        self.export_rows = export
        self.filter_text = ""
        self.view = kernel_view(kernels)  # the rows' own filter and sorts (RowView)
        self.shown: list[KernelRow] = []

    def compose(self) -> ComposeResult:
        yield Static(id="kernel-title")
        yield Input(placeholder=FILTER_HINT, id="kernel-filter", restrict=NO_CONTROLS)
        yield FittedDataTable(COLUMNS, DROP_ORDER, id="kernel-table", cursor_type="row",
                              zebra_stripes=True)  # fmt: skip
        yield Static(id="kernel-status")
        yield Footer()

    def on_mount(self) -> None:
        self._refresh_rows()
        self.query_one(DataTable).focus()

    def _refresh_rows(self) -> None:
        try:  # a bad filter says why and hides nothing, as the rows' filter does
            set_kernel_filter(self.view, self.filter_text)
            problem = ""
        except FilterError as exc:
            problem = str(exc)
        rows = self.shown = self.view.visible_rows()
        accent = palette_of(self.app).accent
        self.query_one(FittedDataTable).show(
            lambda _widths: [
                {
                    "kernel": _literal(row["kernel"]),
                    "operator": _literal(row["operator"], accent),
                    "what": _literal(_what(row), "dim"),
                    "calls": Text(format_count(row["calls"]), justify="right"),
                    "total": Text(format_seconds(row["total_seconds"]), justify="right"),
                    "mean": Text(format_seconds(row["mean_seconds"]), justify="right"),
                    "min": Text(format_seconds(row["min_seconds"]), justify="right"),
                    "max": Text(format_seconds(row["max_seconds"]), justify="right"),
                }
                for row in rows
            ],
            keep=frozenset({self.view.sort.key}),
        )
        title = Text(" Kernels ", style="bold reverse")
        title.append(f"  {neutralise_controls(self.summary)}", style="bold")
        self.query_one("#kernel-title", Static).update(title)
        sort = self.view.sort
        arrow = "↓" if sort.descending else "↑"
        status = f" {len(rows):,} of {len(self.kernels):,} kernel groups, sort {arrow} "
        status += SORT_LABELS[sort.key]
        if problem:
            status += f", filter not applied: {problem}"
        elif self.filter_text:
            status += f", filter {self.filter_text!r}"
        self.query_one("#kernel-status", Static).update(_literal(status))

    @on(Input.Changed, "#kernel-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self._refresh_rows()

    @on(Input.Submitted, "#kernel-filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def action_focus_filter(self) -> None:
        self.set_focus(self.query_one(Input))  # now: keys typed in a burst are its text

    def action_close(self) -> None:
        if self._typing():
            self.query_one(DataTable).focus()
        else:
            self.dismiss()

    def action_sort(self, key: str) -> None:
        self.view.set_sort(self.view.sort.toggled(key))
        self._refresh_rows()

    def action_export(self) -> None:
        self.export_rows(list(self.shown))

    def _typing(self) -> bool:
        try:
            return self.query_one(Input).has_focus
        except NoMatches:  # not composed yet
            return False

    def palette_commands(self) -> Iterable[SystemCommand]:
        return binding_commands(self)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self._typing() and action in ("sort", "export", "focus_filter"):
            return False  # keys typed into the filter are text, not commands
        if action == "export":
            return bool(self.shown)
        return True
