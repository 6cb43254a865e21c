"""The operator table as a widget on its own: its messages name it as their ``control``
(so ``@on(..., "#id")`` tells two tables apart), its columns draw their own cells."""

from __future__ import annotations

from replay import make_row, sample_rows
from rich.segment import Segment
from textual import on
from textual.app import App, ComposeResult
from textual.strip import Strip

from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.common.formatting import MISSING, format_seconds, share_bar
from torchscan_tui.ui.widgets.operator_table import OperatorTable
from torchscan_tui.ui.widgets.table_columns import COLUMNS, Cell, fit


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


def cell_by_cell(table: OperatorTable, row_id: int, state: str, selected: bool) -> Strip:
    """A row's line as each cell's segment, cut or padded to the width and simplified by
    Rich: what the table wrote before it joined the cells itself."""
    width, layout = table.scrollable_content_region.width, table.column_layout()
    cells = table.build_cells(row_id, table.view.rows[row_id])
    base, missing, bar = table._styles_for(state)
    segments = []
    for index, (column, column_width) in enumerate(layout):
        if index:
            segments.append(Segment(" ", base))
        if column.key == "mark":
            segments.append(Segment("●" if selected else " ", base))
        elif column.key == "share":
            segments.append(Segment(share_bar(cells["share"], column_width), bar))
        else:
            text = fit(cells[column.key], column_width, column.align)
            segments.append(Segment(text, missing if cells[column.key] == MISSING else base))
    return Strip(segments).adjust_cell_length(width, base).simplify()


class OddRows(App):
    def compose(self) -> ComposeResult:
        rows = [
            make_row("aten::mm", [[8, 8]], 3, 0.5, net=4096),
            make_row("aten::全角の名前" * 3, [[2]], 1, None),  # wide: cut to the width
            make_row("x" * 300, [[1] * 40], 2, 0.25, device=0.1),  # device time: its columns
            make_row("aten::relu", [], 0, 0.0),
        ]
        yield OperatorTable(RowView(rows))


async def test_a_rows_line_joins_its_cells_as_rich_would():
    """_row_strip joins cells of one style as it lays them out: the same segments as the
    cells one by one, cut or padded to the width and simplified, at every state and
    width (a wide-character name, a missing figure, the share bar, a selected row)."""
    app = OddRows()
    async with app.run_test(size=(150, 20)) as pilot:
        table = app.query_one(OperatorTable)
        for size in ((150, 20), (90, 20), (60, 20)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            width, layout = table.scrollable_content_region.width, table.column_layout()
            for row_id, row in enumerate(table.view.rows):
                for state, selected in (("plain", False), ("cursor", False), ("selected", True)):
                    mine = table._row_strip(row_id, row, layout, width, state, selected)
                    assert list(mine) == list(cell_by_cell(table, row_id, state, selected))
                    assert mine.cell_length == width


class ManyRows(App):
    """A table of 120 rows of a few names: filters that keep some lines, drop others;
    by calls ascending, the rows are in the order of their CPU time descending."""

    def compose(self) -> ComposeResult:
        names = ("aten::addmm", "aten::add", "aten::mm", "aten::pad", "aten::addcmul")
        rows = [
            make_row(names[index % len(names)], [[index, 64]], index + 1, 0.5 / (index + 1))
            for index in range(120)
        ]
        yield OperatorTable(RowView(rows))

    def on_mount(self) -> None:
        self.query_one(OperatorTable).focus()


async def test_a_cursor_move_repaints_only_the_two_lines_it_changes(monkeypatch):
    """Moving the cursor one row draws the line it left and the line it reached, not the
    whole table: a full repaint wrote every line (~11 KB at 160 columns) per key."""
    app = ManyRows()
    async with app.run_test(size=(150, 30)) as pilot:
        table = app.query_one(OperatorTable)
        await pilot.pause()
        drawn: list[int] = []
        draw = table.render_line
        monkeypatch.setattr(table, "render_line", lambda y: drawn.append(y) or draw(y))
        await pilot.press("down")
        await pilot.pause()
        assert sorted(drawn) == [1, 2]


async def test_lines_repainted_one_by_one_show_what_a_whole_repaint_shows():
    """After filters, cursor moves, selections and sorts, each repainting only the lines
    whose row or state changed, the screen is what a repaint of every line gives: lines
    apart from each other ("select": rows 3 and 7), a filter keeping the first lines
    ("addm" after "add"), a sort that keeps every row in place but turns the header's
    arrow (calls ascending is CPU time descending here)."""
    app = ManyRows()
    async with app.run_test(size=(150, 30)) as pilot:
        table = app.query_one(OperatorTable)
        await pilot.pause()

        async def screen_is_whole() -> None:
            await pilot.pause()
            shown = app.export_screenshot()
            table.refresh()
            await pilot.pause()
            assert shown == app.export_screenshot()

        steps = ("add", "down", "select", "addm", "ad", "calls", "calls", "", "down", "mm")
        for step in steps:
            if step == "down":
                table.action_cursor(1)
            elif step == "select":
                table.view.toggle_selected(3)
                table.view.toggle_selected(7)
                table.repaint_changed_lines()
            elif step == "calls":
                table.view.set_sort(table.view.sort.toggled("calls"))
                table.view_changed()
            else:
                table.view.set_filter(step)
                table.view_changed()
            await screen_is_whole()
