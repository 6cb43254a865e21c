"""The operator table: a virtual, line-API table that renders only the visible rows.

Nothing here measures cells: column widths come from the widget's width (the columns and
their layout: ``table_columns.py``), and each line is built on demand in
:meth:`render_line`, so 100k rows cost no more to show than 30; a change repaints only
the lines it changed (:meth:`OperatorTable.repaint_changed_lines`). The
table reads a :class:`~torchscan_tui.analysis.row_view.RowView` (attributes down) and posts
:class:`OperatorTable.Highlighted`, :class:`OperatorTable.Activated` and
:class:`OperatorTable.SortRequested` (messages up). The mouse does what the keys do: a
click moves the cursor, a double click opens the row, a click on a column's title sorts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.common.formatting import MISSING, share_bar
from torchscan_tui.ui.widgets.strip_scrollbar import StripScrollBar
from torchscan_tui.ui.widgets.table_columns import (
    COLUMNS,
    DROP_ORDER,
    FIELD_SORT,
    FIELD_TITLES,
    Cell,
    Column,
    fit,
    layout_columns,
    operator_label,
    sorted_title,
)

MOVEMENT_BINDINGS: list[BindingType] = [
    Binding("up", "cursor(-1)", "Up", show=False),  # k opens the kernel view
    Binding("down,j", "cursor(1)", "Down", show=False),
    Binding("pageup", "page(-1)", "Page up", show=False),
    Binding("pagedown", "page(1)", "Page down", show=False),
    Binding("home", "jump(0)", "First", show=False),
    Binding("end", "jump(-1)", "Last", show=False),
]
LINE_CACHE_SIZE = 4000
CELL_CACHE_SIZE = 20000


class OperatorTable(ScrollView, can_focus=True):
    """Ranked operator rows; the cursor is a position in the view's visible rows."""

    DEFAULT_CSS = """
    OperatorTable > .operator-table--header {
        text-style: bold;
        background: $primary-darken-2;
    }

    OperatorTable > .operator-table--cursor {
        background: $accent 40%;
        text-style: bold;
    }

    OperatorTable:focus > .operator-table--cursor {
        background: $accent;
    }

    OperatorTable > .operator-table--selected {
        background: $secondary 30%;
    }

    OperatorTable > .operator-table--missing {
        color: $text-muted;
    }

    OperatorTable > .operator-table--bar {
        color: $warning;
    }
    """
    COMPONENT_CLASSES = {
        "operator-table--header",
        "operator-table--cursor",
        "operator-table--selected",
        "operator-table--missing",
        "operator-table--bar",
    }
    BINDINGS = [*MOVEMENT_BINDINGS, Binding("enter", "activate", "Details", show=True)]

    # Not repainted by the reactive: watch_cursor repaints the lines that changed.
    cursor = reactive(0, always_update=True, repaint=False)
    # The rows are the last run's, kept on screen while a new run has sent none yet.
    stale = reactive(False)
    # The cursor's (position, row id), set when the cursor comes to another row: a screen
    # showing that row watches it (a watcher runs inside the move, before the frame; the
    # Highlighted message, posted with it, is handled after the table's own frame).
    highlight: reactive[tuple[int, int | None] | None] = reactive(None, repaint=False, init=False)
    TABLE_COLUMNS: tuple[Column, ...] = COLUMNS
    TABLE_DROP_ORDER: tuple[str, ...] = DROP_ORDER

    class _TableMessage(Message):
        def __init__(self, table: OperatorTable):
            super().__init__()
            self.table = table

        @property
        def control(self) -> OperatorTable:
            """The table that sent it (what ``@on(..., "#id")`` selectors match)."""
            return self.table

    class Highlighted(_TableMessage):
        """The cursor moved to another row (``row`` is None when the view is empty)."""

        def __init__(self, table: OperatorTable, row: Mapping[str, Any] | None, position: int):
            super().__init__(table)
            self.row = row
            self.position = position

    class Activated(_TableMessage):
        """Enter was pressed on a row."""

        def __init__(self, table: OperatorTable, row: Mapping[str, Any]):
            super().__init__(table)
            self.row = row

    class SortRequested(_TableMessage):
        """A sortable column's title was clicked; ``key`` is the app's sort key for it."""

        def __init__(self, table: OperatorTable, key: str):
            super().__init__(table)
            self.key = key

    def __init__(self, view: RowView, **kwargs):
        super().__init__(**kwargs)
        self.view = view
        self.share_field = "cpu_self_seconds"
        self.share_total: float | None = None
        self._cells: LRUCache[int, dict[str, Any]] = LRUCache(CELL_CACHE_SIZE)
        self._line_styles: dict[tuple[str, bool], tuple[Style, Style, Style]] = {}
        # Painted lines by their key (row id, cursor/selected state, width, focus, drawing):
        # frames that only move the cursor or follow another widget's change reuse them.
        self._lines: LRUCache[tuple, Strip] = LRUCache(LINE_CACHE_SIZE)
        # What each line of the widget shows now, by the key render_line last drew it
        # with: a filter key or a cursor move repaints only the lines whose key changed.
        # ``_drawing`` counts the changes no line key holds (styles, columns, shares).
        self._painted: dict[int, tuple] = {}
        self._drawing = 0
        # Whether any row has device time and the longest name, from the rows scanned so
        # far (rows stream in).
        self._device_seen = False
        self._flops_seen = False
        self._totals_seen = False
        self._names_width = 0
        self._scanned = 0
        self._layout: tuple = ()
        self._layout_for: tuple = ()  # what self._layout was worked out for

    # Attributes down ------------------------------------------------------------------

    def _forget_rendering(self) -> None:
        """Drop cached cells and lines (rows replaced, share column or styles changed)."""
        self._cells.clear()
        self._new_drawing()

    def _new_drawing(self) -> None:
        """Every line is drawn anew from here (columns, styles or shares changed): the
        painted lines are dropped, and no line's key matches what it showed before."""
        self._lines.clear()
        self._drawing += 1

    def _scan_new_rows(self) -> None:
        """Whether any row has device time, and the longest name shown: rows are looked
        at once each, as they arrive (the names of 100k rows: ~4 ms, in batches)."""
        rows = self.view.rows
        if self._scanned >= len(rows):
            return
        new = rows[self._scanned :]
        if not self._device_seen:
            self._device_seen = any(row.get("device_self_seconds") is not None for row in new)
        if not self._flops_seen:
            self._flops_seen = any(row.get("flops") for row in new)
        if not self._totals_seen:
            self._totals_seen = any(row.get("cpu_total_seconds") is not None for row in new)
        labels = {operator_label(row) for row in new}
        self._names_width = max(self._names_width, *map(len, labels))
        self._scanned = len(rows)

    def has_device_time(self) -> bool:
        self._scan_new_rows()
        return self._device_seen

    def hidden_columns(self) -> frozenset[str]:
        """The device columns while no row has device time (a CPU run), the FLOPs columns
        while no row has FLOPs (a trace): their width goes to the names and shapes."""
        hidden = set() if self.has_device_time() else {"device", "device_total"}
        if not self._flops_seen:
            hidden |= {"flops", "flop_rate"}
        if not self._totals_seen:  # a report written before rows had them
            hidden |= {"cpu_total", "device_total"}
        return frozenset(hidden)

    def column_layout(self) -> tuple[tuple[Column, int], ...]:
        """The columns shown now: by width, the sorted column kept, device time or not.

        Asked for by every line of every repaint: worked out once per change of what it
        depends on."""
        key = self.view.sort.key
        width = self.scrollable_content_region.width
        depends = (width, key, self.has_device_time(), self._flops_seen, self._totals_seen,
                   self._names_width)  # fmt: skip
        if depends == self._layout_for:
            return self._layout
        keep = frozenset(
            column.key for column in self.TABLE_COLUMNS if column.sort == key != "rank"
        )
        if key in ("cpu", "device"):  # their share and per-call follow them
            keep |= {"percent", "per_call"}
        layout = layout_columns(
            width,
            self.TABLE_COLUMNS,
            self.TABLE_DROP_ORDER,
            keep,
            self.hidden_columns(),
            self._names_width,
        )
        if layout is not self._layout:  # painted lines hold the old columns
            self._layout = layout
            self._new_drawing()
        self._layout_for = depends
        return layout

    def view_changed(self, *, rows_replaced: bool = False) -> None:
        """The view's rows, filter or sort changed: resize, clamp the cursor, repaint."""
        if rows_replaced:
            self._forget_rendering()
            self._device_seen, self._names_width, self._scanned = False, 0, 0
            self._flops_seen = self._totals_seen = False
        self._resize_content(Size(self.scrollable_content_region.width, len(self.view.visible) + 1))
        # Set even when unchanged (always_update): its watcher repaints the changed lines.
        self.cursor = min(self.cursor, max(len(self.view.visible) - 1, 0))

    def repaint_changed_lines(self) -> None:
        """Repaint the lines whose row, cursor or selection changed, not the whole table.

        A full repaint writes every line to the terminal (~11 KB at 160 columns): a cursor
        move changes two, a filter key often fewer than all (over ssh, each byte counts).
        A line's key says all it shows, so a line whose key is unchanged is left as is;
        when every line changed, the whole table is repainted at once."""
        width, height = self.scrollable_content_region.size
        self.column_layout()  # new columns are a new drawing: every line changes
        changed = [y for y in range(height) if self._painted.get(y) != self._line_key(y, width)]
        if len(changed) == height:
            self.refresh()
            return
        regions: list[Region] = []
        for y in changed:  # runs of adjacent lines as one region
            if regions and regions[-1].bottom == y:
                last = regions.pop()
                regions.append(Region(0, last.y, width, last.height + 1))
            else:
                regions.append(Region(0, y, width, 1))
        if regions:
            self.refresh(*regions)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The vertical scrollbar, made as Textual makes it but drawn as strips
        (widgets/strip_scrollbar.py): its thumb moves at every filter keystroke."""
        if self._vertical_scrollbar is None:
            bar = StripScrollBar(vertical=True, name="vertical",
                                 thickness=self.scrollbar_size_vertical)  # fmt: skip
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    def _resize_content(self, size: Size) -> None:
        """Set the scrollable size, without a screen layout when the scrollbar stays as is.

        ``virtual_size`` is a layout reactive: setting it makes Textual arrange the whole
        screen, a third of a filter keystroke's time at 100k rows. The table's outer
        size does not depend on its rows; only the scrollbar's appearing or going does
        (it takes a column), so only then is the layout asked for.
        """
        if size == self.virtual_size:
            return
        container = self.container_size
        overflowing = size.height > container.height
        if not container or overflowing != self.show_vertical_scrollbar:
            self.virtual_size = size
            return
        self.set_reactive(ScrollView.virtual_size, size)
        if overflowing:
            self.vertical_scrollbar.window_virtual_size = size.height
        self.scroll_y = self.scroll_y  # clamped to the new content by the validator

    def set_share(self, field: str, total: float | None) -> None:
        self.share_field, self.share_total = field, total
        self._forget_rendering()
        self.refresh()

    @property
    def highlighted_row(self) -> dict | None:
        return self.view.row_at(self.cursor)

    # Cursor and scrolling -------------------------------------------------------------

    @property
    def _page(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def watch_cursor(self, position: int) -> None:
        top = int(self.scroll_offset.y)
        if position < top:
            self.scroll_to(y=position, animate=False, immediate=True)
        elif position >= top + self._page:
            self.scroll_to(y=position - self._page + 1, animate=False, immediate=True)
        self.repaint_changed_lines()  # when it scrolled, every line's key changed
        row = self.view.row_at(position)
        row_id = self.view.visible[position] if row is not None else None
        if self.highlight != (position, row_id):
            self.highlight = (position, row_id)
            self.post_message(self.Highlighted(self, row, position))

    def action_cursor(self, delta: int) -> None:
        if self.view.visible:
            self.cursor = min(max(self.cursor + delta, 0), len(self.view.visible) - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * self._page)

    def action_jump(self, where: int) -> None:
        if self.view.visible:
            self.cursor = 0 if where == 0 else len(self.view.visible) - 1

    def action_activate(self) -> None:
        row = self.highlighted_row
        if row is not None:
            self.post_message(self.Activated(self, row))

    def on_resize(self) -> None:
        self.view_changed()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            key = self.sort_key_at(offset.x)
            if key is not None:
                self.post_message(self.SortRequested(self, key))
            return
        position = int(self.scroll_offset.y) + offset.y - 1
        if 0 <= position < len(self.view.visible):
            self.cursor = position
            if event.chain == 2:
                self.action_activate()

    def sort_key_at(self, x: int) -> str | None:
        """The sort key of the column whose title is at ``x`` (None: not a sortable one)."""
        start = 0
        for column, width in self.column_layout():
            if start <= x < start + width:
                if column.key in ("percent", "per_call"):  # they follow a time field
                    return FIELD_SORT.get(self.share_field)
                return column.sort
            start += width + 1  # the space between columns
        return None

    # Rendering ------------------------------------------------------------------------

    def _cells_for(self, row_id: int, row: dict) -> dict:
        cells = self._cells.get(row_id)
        if cells is None:
            cells = self.build_cells(row_id, row)
            self._cells.set(row_id, cells)
        return cells

    def share_of(self, row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        """The row's figure in the divided time field, and its share of the whole."""
        value = row.get(self.share_field)
        if self.share_total and value is not None:
            return value, value / self.share_total
        return value, None

    def build_cells(self, row_id: int, row: Mapping[str, Any]) -> dict[str, Any]:
        """The text of each column for one row (``share``: a fraction for the bar)."""
        cell = Cell(row, row_id, *self.share_of(row))
        return {column.key: column.cell(cell) for column in self.TABLE_COLUMNS if column.cell}

    def _header_strip(self, layout, width: int) -> Strip:
        style = self.get_component_rich_style("operator-table--header")
        sort = self.view.sort
        arrow = "↓" if sort.descending else "↑"
        texts = []
        titles = FIELD_TITLES.get(self.share_field, {})
        for column, column_width in layout:
            title = titles.get(column.key, column.title)
            if column.sort == sort.key != "rank":
                title = sorted_title(title, arrow, column_width)
            texts.append(fit(title, column_width, column.align))
        return Strip([Segment(" ".join(texts), style)]).adjust_cell_length(width, style)

    def watch_stale(self) -> None:
        self._line_styles.clear()
        self._new_drawing()
        self.refresh()

    def notify_style_update(self) -> None:
        self._line_styles.clear()
        self._new_drawing()
        super().notify_style_update()

    def _styles_for(self, state: str) -> tuple[Style, Style, Style]:
        """(base, missing, bar) styles of a plain, cursor or selected line, computed once
        per focus state and theme: looking them up per line was a third of each repaint."""
        key = (state, self.has_focus)
        styles = self._line_styles.get(key)
        if styles is None:
            base = self.rich_style + Style(dim=True) if self.stale else self.rich_style
            if state != "plain":
                base = base + self.get_component_rich_style(f"operator-table--{state}")
            missing = base + self.get_component_rich_style("operator-table--missing")
            bar = base + self.get_component_rich_style("operator-table--bar")
            styles = self._line_styles[key] = (base, missing, bar)
        return styles

    def _line_key(self, y: int, width: int) -> tuple:
        """All that line ``y`` shows: the header's sort, or the row there and its state."""
        if y == 0:
            sort = self.view.sort
            return ("header", sort.key, sort.descending, width, self._drawing)
        position = int(self.scroll_offset.y) + y - 1
        if not 0 <= position < len(self.view.visible):
            return ("blank", width, self._drawing)
        row_id = self.view.visible[position]
        selected = row_id in self.view.selected
        state = "cursor" if position == self.cursor else ("selected" if selected else "plain")
        return (row_id, state, selected, width, self.has_focus, self._drawing)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        layout = self.column_layout()
        key = self._line_key(y, width)
        self._painted[y] = key
        if y == 0:
            return self._header_strip(layout, width)
        if key[0] == "blank":
            return Strip.blank(width, self.rich_style)
        strip = self._lines.get(key)
        if strip is None:
            row_id, state, selected = key[:3]
            row = self.view.rows[row_id]
            strip = self._row_strip(row_id, row, layout, width, state, selected)
            self._lines.set(key, strip)
        return strip

    def _row_strip(
        self, row_id: int, row: dict, layout, width: int, state: str, selected: bool
    ) -> Strip:
        cells = self._cells_for(row_id, row)
        base, missing, bar = self._styles_for(state)
        # Cells of one style joined into one segment as they are laid out: each segment is
        # written with its whole style (reset, then colours), so a line of ~20 cells was
        # ~500 bytes of escape codes, three quarters of a keystroke's 31 KB frame for tmux
        # or ssh. Joined here, not by Rich's simplify after (a third of a new line's time,
        # and a new line is most of a filter key's table).
        segments: list[Segment] = []
        run: list[str] = []
        run_style, used = base, 0

        def add(text: str, style: Style) -> None:
            """``text`` after the line's last, in the last segment when of its style."""
            nonlocal run, run_style, used
            if style is not run_style and style != run_style:
                if run:
                    segments.append(Segment("".join(run), run_style))
                run, run_style = [], style
            run.append(text)
            used += len(text)

        for index, (column, column_width) in enumerate(layout):
            if index:
                add(" ", base)  # the gap before a column, in the line's own style
            if column.key == "mark":
                add("●" if selected else " ", base)
            elif column.key == "share":
                add(share_bar(cells["share"], column_width), bar)
            else:
                text = fit(cells[column.key], column_width, column.align)
                add(text, missing if cells[column.key] == MISSING else base)
        if used < width:  # the rest of the width, as adjust_cell_length would pad it
            add(" " * (width - used), base)
        if run:
            segments.append(Segment("".join(run), run_style))
        strip = Strip(segments)
        if strip.cell_length != width:  # a wide character in a name: cut to the width
            strip = strip.adjust_cell_length(width, base).simplify()
        return strip
