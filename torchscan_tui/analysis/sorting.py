"""Sorting operator rows: the sort keys, and each row's place under each sort (pure).

Rows with a missing (None) figure always go last, whichever way; ties keep rank order.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, is_not
from typing import Any

from torchscan_tui.analysis.fields import SORT_FIELDS
from torchscan_tui.analysis.fields import SORT_LABELS as ROW_SORT_LABELS

# A row's sorts (analysis/fields.py), and a compare's own two.
SORT_LABELS = {**ROW_SORT_LABELS, "delta": "CPU delta", "ratio": "ratio"}


@dataclass(frozen=True)
class Sort:
    """Which column and which way. ``rank`` is the report's own order."""

    key: str = "rank"
    descending: bool = True

    def toggled(self, key: str) -> Sort:
        """The same key again flips the direction; a new key starts descending. ``rank``
        is always the report's own order, whatever came before (``s`` goes back to it)."""
        if key == "rank":
            return Sort("rank", True)
        if key == self.key:
            return Sort(key, not self.descending)
        return Sort(key, True)

    def describe(self) -> str:
        if self.key == "rank":
            return "rank" if self.descending else "rank (reversed)"
        return f"{SORT_LABELS[self.key]} {'↓' if self.descending else '↑'}"


def has_device_time(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(row.get("device_self_seconds") is not None for row in rows)


ValueOf = Callable[[Mapping[str, Any]], Any]
ROW_NUMBER = "i"  # an order's row numbers: 4 bytes each (rows stop well short of 2**31)


def _getter(name: str) -> ValueOf:
    return lambda row: row.get(name)


def field_getters(fields: dict[str, str]) -> dict[str, ValueOf]:
    return {key: _getter(name) for key, name in fields.items()}


ROW_SORTS: dict[str, ValueOf] = field_getters({k: v for k, v in SORT_FIELDS.items() if k != "rank"})


class SortOrders:
    """Every row's position under each sort, computed once per key and reused.

    Sorting 100k rows costs tens of milliseconds; a keystroke that re-sorts a filtered
    subset should not. The full order is sorted once per key and direction, and a subset
    takes its rows from it in one pass. The app computes the orders in idle time once the
    rows are in, so even the first press of a sort key does not sort.

    Each order is an array of 4-byte row numbers, a key's values are let go once both
    of its orders are made, and a key no row has a figure for (device time in a CPU
    run) reuses the report's own order: the sixteen orders of 100k rows held 22 MiB as
    lists of ints, ~4 MiB so (issue 31).
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], getters: dict[str, ValueOf]):
        self.rows = rows
        self.getters = getters
        self._values: dict[str, list] = {}
        self._orders: dict[tuple[str, bool], array[int]] = {}
        self._rank_order: array[int] | None = None

    def order(self, key: str, descending: bool) -> array[int]:
        """All row ids in this sort: measured figures in order (ties in rank order), then
        the rows whose figure is missing, in rank order."""
        cached = self._orders.get((key, descending))
        if cached is None:
            values = self._values.get(key)
            if values is None:
                value_of = self.getters[key]
                values = self._values[key] = [value_of(row) for row in self.rows]
            ids = range(len(values))
            present = list(compress(ids, map(is_not, values, repeat(None))))
            if not present:
                cached = self._rank()
            else:
                present.sort(key=values.__getitem__, reverse=descending)
                missing = compress(ids, map(is_, values, repeat(None)))
                cached = array(ROW_NUMBER, present)
                cached.extend(missing)
            self._orders[(key, descending)] = cached
            if (key, not descending) in self._orders:
                del self._values[key]  # both orders made: the values are not read again
        return cached

    def _rank(self) -> array[int]:
        if self._rank_order is None or len(self._rank_order) != len(self.rows):
            self._rank_order = array(ROW_NUMBER, range(len(self.rows)))
        return self._rank_order

    def subset(self, key: str, descending: bool, indices: Sequence[int]) -> Sequence[int]:
        """``indices`` in this sort (tests check it against a plain sort of the rows).
        Every row: the order itself, shared and read-only (no int object per row)."""
        order = self.order(key, descending)
        if len(indices) == len(self.rows):
            return order
        keep = bytearray(len(self.rows))
        for index in indices:
            keep[index] = 1
        return list(compress(order, map(keep.__getitem__, order)))
