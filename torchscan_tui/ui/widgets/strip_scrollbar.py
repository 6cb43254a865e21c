"""The table's vertical scrollbar, drawn straight as strips.

Textual draws a scrollbar as any widget: its bar is a Rich renderable that goes through
the visual pipeline and the widget's style cache, line by line. For the operator table,
whose thumb moves at every filter keystroke (the row count changes), that was ~2 ms of a
key's ~12 ms at 100k rows, as much as the 44 lines of the table itself. The bar's cells
are the same ones Textual's :class:`~textual.scrollbar.ScrollBarRender` computes (its
glyphs, colours and the mouse actions in their styles, so a click and a drag do what they
did); only the way from those cells to the screen's strips is shorter.
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

DEFAULT_BACK, DEFAULT_BAR = Color.parse("#555555"), Color.parse("bright_magenta")  # Textual's


class StripScrollBar(ScrollBar):
    """A vertical :class:`~textual.scrollbar.ScrollBar` whose lines are made as strips
    from the bar's own cells, without the visual pipeline."""

    def render_lines(self, crop: Region) -> list[Strip]:
        drawn = self.render()
        if not (self.vertical and isinstance(drawn, ScrollBarRender)) or isinstance(
            drawn.style, str
        ):
            return super().render_lines(crop)  # not the bar this knows: Textual's way
        width, height = self.size
        style = drawn.style
        cells = drawn.render_bar(
            size=height,
            virtual_size=drawn.virtual_size,
            window_size=drawn.window_size,
            position=drawn.position,
            thickness=width,
            vertical=True,
            back_color=style.bgcolor or DEFAULT_BACK,
            bar_color=style.color or DEFAULT_BAR,
        ).segments
        base = self.visual_style.rich_style  # under each cell, as Textual's pipeline lays it
        strips: dict[Segment, Strip] = {}  # the bar has a few kinds of cell: a strip each
        for cell in set(cells[crop.y : crop.bottom]):
            strip = Strip([Segment(cell.text, base + cell.style)], width)
            strips[cell] = strip.crop(crop.x, crop.right) if crop.width != width else strip
        lines = [strips[cell] for cell in cells[crop.y : crop.bottom]]
        blank = Strip([Segment(" " * crop.width, base)], crop.width)
        return lines + [blank] * (crop.height - len(lines))
