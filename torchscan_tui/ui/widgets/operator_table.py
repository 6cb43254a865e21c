"""The operator table: a virtual, line-API table that renders only the visible rows.

Nothing here measures cells: column widths come from the widget's width, and each line is
built on demand in :meth:`render_line`, so 100k rows cost no more to show than 30. The
table reads a :class:`~torchscan_tui.analysis.rows.RowView` (attributes down) and posts
:class:`OperatorTable.Highlighted`, :class:`OperatorTable.Activated` and
:class:`OperatorTable.SortRequested` (messages up). The mouse does what the keys do: a
click moves the cursor, a double click opens the row, a click on a column's title sorts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from torchscan_tui.analysis.rows import RowView
from torchscan_tui.common.formatting import (
    MISSING,
    format_bytes,
    format_count,
    format_seconds,
    format_shapes,
    share_bar,
)
from torchscan_tui.common.text import neutralise_controls


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: flexible
    align: str = "left"
    weight: int = 1  # share of the flexible width
    min_width: int = 0  # for a flexible column: below this, drop other columns first
    drop_order: int = 0  # columns with a higher drop order go first when space is short


# Columns by priority: when the width is short, the highest drop order goes first (the
# bar, then the row number, time per call, bytes, calls, the share); the operator, the
# shapes, the CPU time and the sorted column always stay.
COLUMNS = (
    Column("mark", "", 1),
    Column("rank", "#", 5, "right", drop_order=6),
    Column("operator", "operator", 0, weight=6, min_width=28),
    Column("shapes", "input shapes", 0, weight=5, min_width=18),
    Column("calls", "calls", 7, "right", drop_order=3),
    Column("cpu", "CPU self", 11, "right"),
    Column("device", "device self", 11, "right"),
    Column("percent", "%", 6, "right", drop_order=2),
    Column("per_call", "per call", 10, "right", drop_order=5),
    Column("bytes", "net bytes", 10, "right", drop_order=4),
    Column("share", "share", 10, drop_order=7),
)
# The share and per-call columns follow the time field the table divides (CPU, or device
# when sorted by it): their titles say which.
FIELD_TITLES = {
    "cpu_self_seconds": {"percent": "CPU %", "per_call": "CPU/call"},
    "device_self_seconds": {"percent": "dev %", "per_call": "dev/call"},
}
# What a sorted column's title becomes when the arrow would not fit beside the whole title.
SHORT_TITLES = {"device self": "device", "net bytes": "bytes", "CPU self": "CPU"}


def sorted_title(title: str, arrow: str, width: int) -> str:
    """The title with the sort arrow, always whole: the title gives way, not the arrow
    (at 140 columns ``net bytes ↓`` was cut to ``net bytes…``)."""
    marked = f"{title} {arrow}"
    if len(marked) <= width:
        return marked
    short = SHORT_TITLES.get(title, title)
    if len(short) + 2 > width:
        short = short[: max(width - 3, 0)] + "…"
    return f"{short} {arrow}"


MOVEMENT_BINDINGS = [
    Binding("up", "cursor(-1)", "Up", show=False),  # k opens the kernel view
    Binding("down,j", "cursor(1)", "Down", show=False),
    Binding("pageup", "page(-1)", "Page up", show=False),
    Binding("pagedown", "page(1)", "Page down", show=False),
    Binding("home", "jump(0)", "First", show=False),
    Binding("end", "jump(-1)", "Last", show=False),
]
LINE_CACHE_SIZE = 4000
SORT_COLUMN = {"cpu": "cpu", "device": "device", "calls": "calls", "bytes": "bytes", "rank": "rank"}
FIELD_SORT = {"cpu_self_seconds": "cpu", "device_self_seconds": "device"}
SHORT_RESERVE = 8  # cells kept for each later flexible column when all are short


@lru_cache(maxsize=64)
def layout_columns(
    width: int,
    all_columns: tuple = COLUMNS,
    keep: frozenset[str] = frozenset(),
    hidden: frozenset[str] = frozenset(),
    names_width: int = 0,
) -> tuple[tuple[Column, int], ...]:
    """Columns and widths that fit ``width`` cells, dropping the least needed first.

    ``keep``: columns never dropped (the sorted one); ``hidden``: columns left out (the
    device column of a run without device time), their width going to the names;
    ``names_width``: the longest operator name (0: unknown): the operator column takes
    no more than that, and the shapes the rest. Cached: every line of every repaint asks
    for the same few layouts."""
    columns = [column for column in all_columns if column.key not in hidden]
    while True:
        fixed = sum(column.width for column in columns) + len(columns) - 1
        flexible = [column for column in columns if column.width == 0]
        spare = width - fixed
        droppable = [column for column in columns if column.drop_order and column.key not in keep]
        if spare >= sum(column.min_width for column in flexible) or not droppable:
            break
        columns.remove(max(droppable, key=lambda column: column.drop_order))
    spare = max(spare, len(flexible))
    # Each flexible column gets its minimum first (the operator's name before the
    # shapes), then the rest by weight.
    floor = sum(column.min_width for column in flexible)
    extra = max(spare - floor, 0) if spare >= floor else 0
    total_weight = sum(column.weight for column in flexible)
    widths, given = [], 0
    for position, column in enumerate(columns):
        if column.width:
            widths.append((column, column.width))
            continue
        if spare >= floor:
            share = column.min_width + extra * column.weight // total_weight
        else:  # short of the minimums: the first (the operator) first, the rest a little
            later = sum(1 for other in columns[position + 1 :] if other.width == 0)
            share = max(min(column.min_width, spare - given - SHORT_RESERVE * later), 1)
        widths.append((column, share))
        given += share
    if flexible and given < spare:  # rounding: the last flexible column takes the rest
        index = max(i for i, (column, _) in enumerate(widths) if column.width == 0)
        column, share = widths[index]
        widths[index] = (column, share + spare - given)
    return _names_give_way(widths, names_width)


def _names_give_way(widths: list, names_width: int) -> tuple[tuple[Column, int], ...]:
    """The operator column's cells beyond the longest name (or its title) go to the shapes."""
    keys = [column.key for column, _ in widths]
    if not names_width or "operator" not in keys or "shapes" not in keys:
        return tuple(widths)
    at, to = keys.index("operator"), keys.index("shapes")
    (operator, has), (shapes, shapes_width) = widths[at], widths[to]
    spare = has - max(names_width, len(operator.title))
    if spare > 0:
        widths[at], widths[to] = (operator, has - spare), (shapes, shapes_width + spare)
    return tuple(widths)


def operator_label(row: dict) -> str:
    """The operator as the table shows it: a rank's own row streamed live is marked with
    its rank (``r1 aten::mm``); the cross-rank rows that replace them are not."""
    rank = row.get("rank")
    return f"r{rank} {row['operator']}" if isinstance(rank, int) else row["operator"]


def fit(text: str, width: int, align: str) -> str:
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…" if width > 0 else ""
    return text.rjust(width) if align == "right" else text.ljust(width)


class OperatorTable(ScrollView, can_focus=True):
    """Ranked operator rows; the cursor is a position in the view's visible rows."""

    COMPONENT_CLASSES = {
        "operator-table--header",
        "operator-table--cursor",
        "operator-table--selected",
        "operator-table--missing",
        "operator-table--bar",
    }
    BINDINGS = [*MOVEMENT_BINDINGS, Binding("enter", "activate", "Details", show=True)]

    cursor = reactive(0, always_update=True)
    # The rows are the last run's, kept on screen while a new run has sent none yet.
    stale = reactive(False)
    TABLE_COLUMNS: tuple[Column, ...] = COLUMNS
    SORT_COLUMNS: dict[str, str] = SORT_COLUMN

    class Highlighted(Message):
        """The cursor moved to another row (``row`` is None when the view is empty)."""

        def __init__(self, table: OperatorTable, row: dict | None, position: int):
            super().__init__()
            self.table = table
            self.row = row
            self.position = position

    class Activated(Message):
        """Enter was pressed on a row."""

        def __init__(self, table: OperatorTable, row: dict):
            super().__init__()
            self.table = table
            self.row = row

    class SortRequested(Message):
        """A sortable column's title was clicked; ``key`` is the app's sort key for it."""

        def __init__(self, table: OperatorTable, key: str):
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, view: RowView, **kwargs):
        super().__init__(**kwargs)
        self.view = view
        self.share_field = "cpu_self_seconds"
        self.share_total: float | None = None
        self._cells: dict[int, dict] = {}
        self._last_highlight: tuple[int, int | None] | None = None
        self._line_styles: dict[tuple[str, bool], tuple[Style, Style, Style]] = {}
        # Painted lines by (row id, cursor/selected state, width, focus): frames that only
        # move the cursor or follow another widget's change reuse them.
        self._lines: dict[tuple, Strip] = {}
        # Whether any row has device time and the longest name, from the rows scanned so
        # far (rows stream in).
        self._device_seen = False
        self._names_width = 0
        self._scanned = 0
        self._layout: tuple = ()
        self._layout_for: tuple = ()  # what self._layout was worked out for

    # Attributes down ------------------------------------------------------------------

    def _forget_rendering(self) -> None:
        """Drop cached cells and lines (rows replaced, share column or styles changed)."""
        self._cells.clear()
        self._lines.clear()

    def _scan_new_rows(self) -> None:
        """Whether any row has device time, and the longest name shown: rows are looked
        at once each, as they arrive (the names of 100k rows: ~4 ms, in batches)."""
        rows = self.view.rows
        if self._scanned >= len(rows):
            return
        new = rows[self._scanned :]
        if not self._device_seen:
            self._device_seen = any(row.get("device_self_seconds") is not None for row in new)
        labels = {operator_label(row) for row in new}
        self._names_width = max(self._names_width, *map(len, labels))
        self._scanned = len(rows)

    def has_device_time(self) -> bool:
        self._scan_new_rows()
        return self._device_seen

    def hidden_columns(self) -> frozenset[str]:
        """The device column, while no row has device time (a CPU run): its width goes to
        the names."""
        return frozenset() if self.has_device_time() else frozenset({"device"})

    def layout(self) -> tuple[tuple[Column, int], ...]:
        """The columns shown now: by width, the sorted column kept, device time or not.

        Asked for by every line of every repaint: worked out once per change of what it
        depends on."""
        key = self.view.sort.key
        width = self.scrollable_content_region.width
        depends = (width, key, self.has_device_time(), self._names_width)
        if depends == self._layout_for:
            return self._layout
        keep = frozenset() if key == "rank" else frozenset({self.SORT_COLUMNS.get(key, "")})
        if key in ("cpu", "device"):  # their share and per-call follow them
            keep |= {"percent", "per_call"}
        layout = layout_columns(
            width, self.TABLE_COLUMNS, keep, self.hidden_columns(), self._names_width
        )
        if layout is not self._layout:  # painted lines hold the old columns
            self._layout = layout
            self._lines.clear()
        self._layout_for = depends
        return layout

    def view_changed(self, *, rows_replaced: bool = False) -> None:
        """The view's rows, filter or sort changed: resize, clamp the cursor, repaint."""
        if rows_replaced:
            self._forget_rendering()
            self._device_seen, self._names_width, self._scanned = False, 0, 0
        self._resize_content(Size(self.scrollable_content_region.width, len(self.view.visible) + 1))
        self.cursor = min(self.cursor, max(len(self.view.visible) - 1, 0))
        self.refresh()

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
        self.refresh()
        row = self.view.row_at(position)
        row_id = self.view.visible[position] if row is not None else None
        if self._last_highlight != (position, row_id):
            self._last_highlight = (position, row_id)
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
        for column, width in self.layout():
            if start <= x < start + width:
                if column.key in ("percent", "per_call"):  # they follow a time field
                    return FIELD_SORT.get(self.share_field)
                return self.SORT_COLUMNS.get(column.key)
            start += width + 1  # the space between columns
        return None

    # Rendering ------------------------------------------------------------------------

    def _cells_for(self, row_id: int, row: dict) -> dict:
        cells = self._cells.get(row_id)
        if cells is None:
            cells = self.build_cells(row_id, row)
            if len(self._cells) > 20000:
                self._cells.clear()
            self._cells[row_id] = cells
        return cells

    def build_cells(self, row_id: int, row: dict) -> dict:
        """The text of each column for one row (``share``: a fraction for the bar)."""
        share = None
        value = row.get(self.share_field)
        if self.share_total and value is not None:
            share = value / self.share_total
        calls = row["calls"]
        return {
            "rank": str(row_id + 1),
            "operator": neutralise_controls(operator_label(row)),
            "shapes": neutralise_controls(format_shapes(row["input_shapes"])),
            "calls": format_count(row["calls"]),
            "cpu": format_seconds(row["cpu_self_seconds"]),
            "device": format_seconds(row["device_self_seconds"]),
            "bytes": format_bytes(row["cpu_net_bytes"]),
            "percent": MISSING if share is None else f"{share:.1%}",
            "per_call": MISSING if value is None or not calls else format_seconds(value / calls),
            "share": share,
        }

    def _header_strip(self, layout, width: int) -> Strip:
        style = self.get_component_rich_style("operator-table--header")
        sort = self.view.sort
        arrow = "↓" if sort.descending else "↑"
        texts = []
        titles = FIELD_TITLES.get(self.share_field, {})
        for column, column_width in layout:
            title = titles.get(column.key, column.title)
            if self.SORT_COLUMNS.get(column.key) == sort.key and sort.key != "rank":
                title = sorted_title(title, arrow, column_width)
            texts.append(fit(title, column_width, column.align))
        return Strip([Segment(" ".join(texts), style)]).adjust_cell_length(width, style)

    def watch_stale(self) -> None:
        self._line_styles.clear()
        self._lines.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        self._line_styles.clear()
        self._lines.clear()
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

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        layout = self.layout()
        if y == 0:
            return self._header_strip(layout, width)
        position = int(self.scroll_offset.y) + y - 1
        row = self.view.row_at(position)
        if row is None:
            return Strip.blank(width, self.rich_style)
        row_id = self.view.visible[position]
        selected = row_id in self.view.selected
        state = "cursor" if position == self.cursor else ("selected" if selected else "plain")
        key = (row_id, state, selected, width, self.has_focus)
        strip = self._lines.get(key)
        if strip is None:
            if len(self._lines) > LINE_CACHE_SIZE:
                self._lines.clear()
            strip = self._lines[key] = self._row_strip(row_id, row, layout, width, state, selected)
        return strip

    def _row_strip(
        self, row_id: int, row: dict, layout, width: int, state: str, selected: bool
    ) -> Strip:
        cells = self._cells_for(row_id, row)
        base, missing, bar = self._styles_for(state)
        segments: list[Segment] = []
        for index, (column, column_width) in enumerate(layout):
            if index:
                segments.append(Segment(" ", base))
            if column.key == "mark":
                segments.append(Segment("●" if selected else " ", base))
            elif column.key == "share":
                text = share_bar(cells["share"], column_width)
                segments.append(Segment(text, bar))
            else:
                text = fit(cells[column.key], column_width, column.align)
                style = missing if cells[column.key] == MISSING else base
                segments.append(Segment(text, style))
        return Strip(segments).adjust_cell_length(width, base)
