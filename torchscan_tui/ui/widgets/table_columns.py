"""The operator table's columns: what each shows, and how they share a width.

A column is a key, a title, a width (0: flexible) and a function from a row's
:class:`Cell` to its text; :func:`layout_columns` fits them to a width, dropping the least
needed first (:data:`DROP_ORDER`). The table (``operator_table.py``) draws the lines;
nothing here knows about Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from torchscan_tui.analysis.fields import FIELDS, ROW_FIELDS
from torchscan_tui.common.formatting import MISSING, format_seconds, format_shapes
from torchscan_tui.common.text import neutralise_controls


class Cell(NamedTuple):
    """What a column's cell function is given: the row, its id (its rank in the report)
    and its figure in the time field the table divides, with that figure's share."""

    row: Mapping[str, Any]
    row_id: int
    value: float | None  # the row's CPU (or device) self time: what the share divides
    share: float | None  # ``value`` over the whole (None: no whole, or not measured)


CellText = Callable[[Cell], Any]  # the column's text (the bar's: its fraction)


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: flexible
    align: str = "left"
    weight: int = 1  # share of the flexible width
    min_width: int = 0  # for a flexible column: below this, drop other columns first
    cell: CellText | None = None  # None: drawn by the table itself (the selection mark)
    sort: str | None = None  # the sort key a click on its title asks for


def field_column(key: str, field_key: str, width: int, **options: Any) -> Column:
    """A column that shows one field of the row table (analysis/fields.py): its short
    title, its sort, its text."""
    field = FIELDS[field_key]
    return Column(key, field.short, width, "right", sort=field.sort,
                  cell=lambda cell: field.text(cell.row.get(field_key)), **options)  # fmt: skip


def _per_call(cell: Cell) -> str:
    calls = cell.row["calls"]
    return MISSING if cell.value is None or not calls else format_seconds(cell.value / calls)


COLUMNS = (
    Column("mark", "", 1),
    Column("rank", "#", 5, "right", sort="rank", cell=lambda cell: str(cell.row_id + 1)),
    Column("operator", FIELDS["operator"].short, 0, weight=6, min_width=28,
           cell=lambda cell: neutralise_controls(operator_label(cell.row))),
    Column("shapes", FIELDS["input_shapes"].short, 0, weight=5, min_width=18,
           cell=lambda cell: neutralise_controls(format_shapes(cell.row["input_shapes"]))),
    field_column("calls", "calls", 7),
    field_column("cpu", "cpu_self_seconds", 11),
    field_column("device", "device_self_seconds", 11),
    Column("percent", "%", 6, "right",
           cell=lambda cell: MISSING if cell.share is None else f"{cell.share:.1%}"),
    Column("per_call", "per call", 10, "right", cell=_per_call),
    field_column("bytes", "cpu_net_bytes", 10),
    field_column("cpu_total", "cpu_total_seconds", 11),
    field_column("device_total", "device_total_seconds", 11),
    field_column("flops", "flops", 12),
    field_column("flop_rate", "flops_per_second", 14),
    Column("share", "share", 10, cell=lambda cell: cell.share),
)  # fmt: skip
# When the width is short, columns go in this order (FLOPs and the inclusive times, which
# a wide terminal shows, then the bar, the row number, time per call, bytes, calls, the
# share); the operator, the shapes, the CPU time and the sorted column always stay.
DROP_ORDER = ("flop_rate", "flops", "device_total", "cpu_total", "share", "rank", "per_call",
              "bytes", "calls", "percent")  # fmt: skip
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


# The sort that a share or per-call column's title asks for: the time field's own.
FIELD_SORT = {field.key: field.sort for field in ROW_FIELDS if field.unit == "seconds"}
SHORT_RESERVE = 8  # cells kept for each later flexible column when all are short


@lru_cache(maxsize=64)
def layout_columns(
    width: int,
    all_columns: tuple[Column, ...] = COLUMNS,
    drop_order: tuple[str, ...] = DROP_ORDER,
    keep: frozenset[str] = frozenset(),
    hidden: frozenset[str] = frozenset(),
    names_width: int = 0,
    padding: int = 0,
) -> tuple[tuple[Column, int], ...]:
    """Columns and widths that fit ``width`` cells, dropping the least needed first.

    ``drop_order``: the columns that may go, first to go first; ``keep``: columns never
    dropped (the sorted one); ``hidden``: columns left out (the
    device column of a run without device time), their width going to the names;
    ``names_width``: the longest operator name (0: unknown): the operator column takes
    no more than that, and the shapes the rest. ``padding``: cells each side of every
    column (a ``DataTable``'s); 0, one cell between columns (the operator table's).
    Cached: every line of every repaint asks for the same few layouts."""
    columns = [column for column in all_columns if column.key not in hidden]
    while True:
        between = 2 * padding * len(columns) if padding else len(columns) - 1
        fixed = sum(column.width for column in columns) + between
        flexible = [column for column in columns if column.width == 0]
        spare = width - fixed
        shown = {column.key: column for column in columns}
        droppable = [key for key in drop_order if key in shown and key not in keep]
        if spare >= sum(column.min_width for column in flexible) or not droppable:
            break
        columns.remove(shown[droppable[0]])
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


def operator_label(row: Mapping[str, Any]) -> str:
    """The operator as the table shows it: a rank's own row streamed live is marked with
    its rank (``r1 aten::mm``); the cross-rank rows that replace them are not."""
    rank = row.get("rank")
    return f"r{rank} {row['operator']}" if isinstance(rank, int) else row["operator"]


def fit(text: str, width: int, align: str) -> str:
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…" if width > 0 else ""
    return text.rjust(width) if align == "right" else text.ljust(width)
