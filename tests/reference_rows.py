"""Plain, slow references for the row view's fast paths: tests compare the two."""

from __future__ import annotations

from collections.abc import Sequence

from torchscan_tui.analysis.filtering import Filter
from torchscan_tui.analysis.sorting import ROW_SORTS, Sort, ValueOf


def matches(row_filter: Filter, row: dict) -> bool:
    """Whether ``row`` passes ``row_filter``, read straight from the row (no index)."""
    name = row["operator"].lower()
    if not all(term.matcher()(name) for term in row_filter.words):
        return False
    if any(kind != row.get("kind") for kind in row_filter.kinds):
        return False
    inputs = row["input_shapes"]
    return all(any(term.matches_shape(shape) for shape in inputs) for term in row_filter.shapes)


def sorted_indices(
    rows: Sequence[dict], indices: list[int], sort: Sort, getters: dict[str, ValueOf] | None = None
) -> list[int]:
    """``indices`` ordered by ``sort``; rows with a missing (None) figure always go last.

    The reference for :class:`~torchscan_tui.analysis.row_view.SortOrders`; ties keep rank
    order.
    """
    if sort.key == "rank":
        return indices if sort.descending else indices[::-1]
    value_of = (getters or ROW_SORTS)[sort.key]
    values = {i: value_of(rows[i]) for i in indices}
    present = [i for i in indices if values[i] is not None]
    missing = [i for i in indices if values[i] is None]
    present.sort(key=values.__getitem__, reverse=sort.descending)
    return present + missing
