"""The operator table's scrollbar, drawn as strips (widgets/strip_scrollbar.py): the same
cells Textual's own scrollbar draws, at every position and state, and the mouse still
scrolls with it."""

from __future__ import annotations

from replay import sample_rows
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.scrollbar import ScrollBar

from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.ui.widgets.operator_table import OperatorTable
from torchscan_tui.ui.widgets.strip_scrollbar import StripScrollBar


class ManyRows(App):
    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rows = [dict(sample_rows()[n % 3], operator=f"aten::op{n}") for n in range(rows)]

    def compose(self) -> ComposeResult:
        yield OperatorTable(RowView(self.rows))


def cells(strips) -> list[list[tuple]]:
    """What reaches the terminal from each line: each cell's text, colours, reverse and
    the mouse action in its style (a line of one style written in one segment or two)."""
    drawn = []
    for strip in strips:
        line = []
        for segment in strip:
            style = segment.style
            line += [(character, style.color, style.bgcolor, bool(style.reverse), style.meta)
                     for character in segment.text]  # fmt: skip
        drawn.append(line)
    return drawn


async def test_the_table_draws_the_cells_textuals_scrollbar_draws():
    app = ManyRows(500)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(OperatorTable)
        bar = table.vertical_scrollbar
        assert isinstance(bar, StripScrollBar) and bar.display
        width, height = bar.size  # Textual's default: 2 cells wide (the app's CSS: 1)
        for position in (0, 1, 7, 250, 10_000):  # the top, a cell's eighths, the end
            table.scroll_to(y=position, animate=False)
            await pilot.pause()
            for crop in (Region(0, 0, width, height), Region(0, 0, 1, height), Region(1, 3, 1, 5)):
                theirs = ScrollBar.render_lines(bar, crop)  # Textual's pipeline
                mine = bar.render_lines(crop)
                assert cells(mine) == cells(theirs), (position, crop)
                assert [strip.cell_length for strip in mine] == [crop.width] * crop.height
        bar.mouse_over = True  # the hover colours
        await pilot.pause()
        crop = Region(0, 0, width, height)
        assert cells(bar.render_lines(crop)) == cells(ScrollBar.render_lines(bar, crop))


async def test_a_click_below_the_thumb_still_scrolls_the_table_down():
    app = ManyRows(500)
    async with app.run_test(size=(120, 24)) as pilot:
        table = app.query_one(OperatorTable)
        bar = table.vertical_scrollbar
        await pilot.pause()
        assert table.scroll_y == 0
        await pilot.click(bar, offset=(0, bar.size.height - 1))
        await pilot.pause()
        assert table.scroll_y > 0


async def test_a_table_that_fits_has_no_scrollbar_to_draw():
    app = ManyRows(3)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one(OperatorTable).show_vertical_scrollbar
