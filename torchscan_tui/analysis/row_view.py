"""The rows a table shows: all of them, a filter, a sort and a selection (pure).

The filter language is in :mod:`.filtering`, the sorts in :mod:`.sorting`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import eq
from typing import Any, Generic, TypeVar

from torchscan_tui.analysis.filtering import Filter, FilterError, RowIndex, parse_filter
from torchscan_tui.analysis.noise import without_noise
from torchscan_tui.analysis.sorting import ROW_SORTS, Sort, SortOrders, ValueOf

# An operator row, a compare row, a kernel row: whatever a table shows, a name and figures.
RowT = TypeVar("RowT", bound=Mapping[str, Any])


def same_ids(first: Sequence[int], second: Sequence[int]) -> bool:
    """Whether two ``visible`` sequences hold the same ids in the same order, whichever
    kind each is (a range, an array, a list: such never compare equal to one another)."""
    if first is second:
        return True
    if type(first) is type(second):
        return first == second
    return len(first) == len(second) and all(map(eq, first, second))


@dataclass
class RowView(Generic[RowT]):
    """The rows a table shows: all rows, a filter, a sort, and a selection (by row id).

    Row ids are positions in ``rows`` (the report's rank order), so a selection survives
    filtering and sorting.
    """

    rows: list[RowT] = field(default_factory=list)
    filter: Filter = field(default_factory=Filter)
    sort: Sort = field(default_factory=Sort)
    selected: set[int] = field(default_factory=set)
    # Row ids shown, in order: a range in the report's order, a sort's shared order of
    # every row, or a list for a filter's; never an int object per row for all of them
    # (100k ints held 3.8 MiB of the UI's 150, issue 31). Read-only: replaced, not changed.
    visible: Sequence[int] = field(default_factory=list)
    hide_noise: bool = False  # leave out [memory] rows and view-only operators (.noise)

    index: RowIndex = field(default_factory=RowIndex)
    sort_getters: dict[str, ValueOf] | None = None  # sort key -> value; None: report rows

    def __post_init__(self) -> None:
        self.index.add(self.rows)
        self._orders = SortOrders(self.rows, self.sort_getters or ROW_SORTS)
        self.refresh()

    def refresh(self) -> None:
        indices: Sequence[int]
        if self.filter.empty:
            indices = range(len(self.rows))
        else:
            indices = self.filter.select(self.index)
        if self.hide_noise:
            self.index.index_some()
            indices = without_noise(indices, self.index.names, self.index.kinds)
        if self.sort.key == "rank":
            self.visible = indices if self.sort.descending else indices[::-1]
        else:
            self.visible = self._orders.subset(self.sort.key, self.sort.descending, indices)

    def warm_up(self, rows_per_step: int = 10_000) -> Iterator[None]:
        """Build the filter index and each sort's orders, a slice per step: the app runs
        the steps in idle moments so the first filter or sort key finds them ready."""
        while not self.index.complete:
            self.index.index_some(rows_per_step)
            yield
        for key in self._orders.getters:
            for descending in (True, False):
                self._orders.order(key, descending)
                yield

    def extend(self, new_rows: Sequence[RowT]) -> None:
        """Add rows that arrive in rank order. In rank order with no filter, the new rows
        simply go at the end, so a stream of batches costs nothing per batch."""
        self.rows.extend(new_rows)
        self.index.add(new_rows)
        self._orders = SortOrders(self.rows, self._orders.getters)
        if self.filter.empty and self.sort == Sort() and not self.hide_noise:
            self.visible = range(len(self.rows))
        else:
            self.refresh()

    def set_rows(self, rows: list[RowT]) -> None:
        self.rows = rows
        self.index = self.index.empty_copy()
        self.index.add(rows)
        self._orders = SortOrders(rows, self._orders.getters)
        self.selected.clear()
        self.refresh()

    def set_filter(self, text: str) -> bool:
        """Apply ``text``; on FilterError the previous filter is dropped (all rows show).

        Returns whether the visible rows changed: typing through an unfinished term, or a
        word that matches the same rows, leaves the table as it is and needs no repaint.
        """
        before = self.visible
        try:
            self.filter = parse_filter(text)
        except FilterError:
            self.filter = Filter()
            self.refresh()
            raise
        self.refresh()
        return not same_ids(self.visible, before)

    def set_hide_noise(self, hide: bool) -> None:
        self.hide_noise = hide
        self.refresh()

    def set_sort(self, sort: Sort) -> None:
        self.sort = sort
        self.refresh()

    def visible_rows(self) -> list[RowT]:
        """The rows shown, in view order."""
        return [self.rows[i] for i in self.visible]

    def row_at(self, position: int) -> RowT | None:
        if 0 <= position < len(self.visible):
            return self.rows[self.visible[position]]
        return None

    def toggle_selected(self, position: int) -> None:
        if 0 <= position < len(self.visible):
            row_id = self.visible[position]
            if row_id in self.selected:
                self.selected.remove(row_id)
            else:
                self.selected.add(row_id)

    def select_all_visible(self) -> None:
        self.selected.update(self.visible)

    def toggle_all_visible(self) -> None:
        """Select every visible row, or, when they all are, unselect them."""
        if self.visible and self.selected.issuperset(self.visible):
            self.selected.difference_update(self.visible)
        else:
            self.select_all_visible()

    def clear_selection(self) -> None:
        self.selected.clear()

    def hidden_selected(self) -> int:
        """How many selected rows the filter hides (an export takes them too)."""
        return len(self.selected.difference(self.visible))

    def rows_to_export(self, highlighted: int) -> list[RowT]:
        """The selected rows in view order, else the highlighted row."""
        if self.selected:
            chosen = [i for i in self.visible if i in self.selected]
            chosen += sorted(self.selected.difference(self.visible))
            return [self.rows[i] for i in chosen]
        row = self.row_at(highlighted)
        return [row] if row is not None else []
