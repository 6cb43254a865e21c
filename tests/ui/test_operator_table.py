"""The operator table as a widget on its own: its messages name it as their ``control``
(so ``@on(..., "#id")`` tells two tables apart), its columns draw their own cells."""

from __future__ import annotations

from replay import sample_rows
from textual import on
from textual.app import App, ComposeResult

from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.common.formatting import format_seconds
from torchscan_tui.ui.widgets.operator_table import COLUMNS, Cell, OperatorTable


class TwoTables(App):
    def __init__(self) -> None:
        super().__init__()
        self.heard: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield OperatorTable(RowView(sample_rows()), id="left")
        yield OperatorTable(RowView(sample_rows()), id="right")

    @on(OperatorTable.Highlighted, "#right")
    def right_moved(self, message: OperatorTable.Highlighted) -> None:
        assert message.control is message.table
        self.heard.append((message.control.id or "", message.row and message.row["operator"]))


async def test_a_tables_messages_are_matched_by_its_id():
    app = TwoTables()
    async with app.run_test(size=(140, 30)) as pilot:
        app.query_one("#left", OperatorTable).focus()
        await pilot.press("down")
        await pilot.pause()
        assert all(table == "right" for table, _ in app.heard)  # left's move is not heard
        heard = len(app.heard)
        app.query_one("#right", OperatorTable).focus()
        await pilot.press("down")
        await pilot.pause()
        assert len(app.heard) == heard + 1 and app.heard[-1][0] == "right"


def test_each_column_draws_its_own_cell():
    row = sample_rows()[0]
    cells = {column.key: column.cell(Cell(row, 4, 0.002, 0.25)) for column in COLUMNS
             if column.cell}  # fmt: skip
    assert cells["rank"] == "5" and cells["percent"] == "25.0%" and cells["share"] == 0.25
    assert cells["operator"] == row["operator"]
    assert cells["per_call"] == format_seconds(0.002 / row["calls"])
    assert cells["cpu"] == format_seconds(row["cpu_self_seconds"])


async def test_a_line_is_written_with_a_segment_per_style_not_per_cell():
    """Each segment reaches the terminal with its whole style: a line of ~15 cells in
    one style is one segment (plus the share bar's and a missing figure's)."""
    app = TwoTables()
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        table = app.query_one("#left", OperatorTable)
        for y in range(2, 5):
            segments = list(table.render_line(y))
            assert all(a.style != b.style for a, b in zip(segments, segments[1:], strict=False))
            assert len(segments) <= 6, [segment.text for segment in segments]
