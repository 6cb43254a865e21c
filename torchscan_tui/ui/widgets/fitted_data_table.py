"""A ``DataTable`` whose columns fit its width, as the operator table's do.

The kernel view's and the source lines' tables had fixed widths summing to ~150 cells:
on a narrower terminal the figures on the right (the total a kernel view is sorted by)
were off screen, behind a horizontal scroll. Here the columns are laid out by
:func:`~torchscan_tui.ui.widgets.table_columns.layout_columns` (the least needed dropped
first, the names sharing what is left) and laid out again when the table is resized.
Rows are made as cells by column key, for the columns' widths (a cell may cut its text
to fit, from wherever suits it); a column that is not shown just is not read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual import events
from textual.widgets import DataTable

from torchscan_tui.ui.widgets.table_columns import Column, layout_columns

CellsByKey = Mapping[str, Any]
RowsFor = Callable[[Mapping[str, int]], Sequence[CellsByKey]]
"""The rows' cells for the columns' widths (by key)."""


class FittedDataTable(DataTable):
    """``columns`` (width 0: flexible, with a ``min_width`` and a ``weight``) fitted to
    the table's width; ``drop_order``: the columns that may go, first to go first."""

    def __init__(
        self, columns: tuple[Column, ...], drop_order: tuple[str, ...], **options: Any
    ) -> None:
        super().__init__(**options)
        self.all_columns = columns
        self.drop_order = drop_order
        self.keep: frozenset[str] = frozenset()  # never dropped (the sorted column)
        self.hidden: frozenset[str] = frozenset()  # left out (nothing to show in them)
        self.columns_shown: tuple[tuple[Column, int], ...] = ()
        self._rows_for: RowsFor | None = None

    def fitted_layout(self) -> tuple[tuple[Column, int], ...]:
        """The columns and widths for the table's width now (a vertical scrollbar's
        cells kept free: rows that come later may need one)."""
        width = self.size.width or self.app.size.width  # not laid out yet: the screen's
        width = max(width - self.styles.scrollbar_size_vertical, 1)
        return layout_columns(width, self.all_columns, self.drop_order, self.keep,
                              self.hidden, padding=self.cell_padding)  # fmt: skip

    def show(
        self,
        rows_for: RowsFor,
        keep: frozenset[str] = frozenset(),
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        """Show the rows ``rows_for`` makes for the columns' widths, the cursor at the top."""
        self.keep, self.hidden, self._rows_for = keep, hidden, rows_for
        self._draw(rows_for, cursor_row=0)

    def _draw(self, rows_for: RowsFor, cursor_row: int) -> None:
        layout = self.fitted_layout()
        self.clear(columns=layout != self.columns_shown)
        if layout != self.columns_shown:
            self.columns_shown = layout
            for column, width in layout:
                self.add_column(column.title, width=width, key=column.key)
        rows = rows_for({column.key: width for column, width in layout})
        keys = [column.key for column, _ in layout]
        self.add_rows([cells[key] for key in keys] for cells in rows)
        if rows:
            self.move_cursor(row=min(cursor_row, len(rows) - 1), animate=False)

    def on_resize(self, event: events.Resize) -> None:
        if self._rows_for is not None and self.fitted_layout() != self.columns_shown:
            self._draw(self._rows_for, cursor_row=self.cursor_row)

    def shown_keys(self) -> list[str]:
        """The keys of the columns shown now, left to right."""
        return [column.key for column, _ in self.columns_shown]
