"""Filtering and sorting operator rows (pure: no torch, no textual).

The filter language, as the UI's filter box takes it:

* ``[8, 16, 64]`` or ``8x16x64`` matches rows with an input of exactly that shape;
  ``*`` matches any one dimension (``[*, 64]``, ``*x64``); ``[]`` a scalar input;
* ``kind:annotation`` (or ``runtime``, ``operator``, ``memory``) matches the row kind;
* any other word matches operator names, case-insensitively, as a substring;
* several terms must all match.

A bad filter raises :class:`FilterError` with a message for the user; callers then show
every row rather than silently hiding some.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_, is_not

ANY = None  # a wildcard dimension
_DIMS_TOKEN = re.compile(r"^(\d+|\*)(x(\d+|\*))+$")
KINDS = ("operator", "runtime", "annotation", "memory")


class FilterError(ValueError):
    """The filter text cannot be understood; the message says why, for the user."""


@dataclass(frozen=True)
class ShapeTerm:
    dims: tuple[int | None, ...]

    def matches_shape(self, shape: object) -> bool:
        if not isinstance(shape, list) or len(shape) != len(self.dims):
            return False
        return all(want is ANY or want == got for want, got in zip(self.dims, shape, strict=True))

    def describe(self) -> str:
        return "[" + ", ".join("*" if d is ANY else str(d) for d in self.dims) + "]"


@dataclass(frozen=True)
class Filter:
    """A parsed filter: every term must match."""

    text: str = ""
    words: tuple[str, ...] = ()
    shapes: tuple[ShapeTerm, ...] = ()
    kinds: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.words or self.shapes or self.kinds)

    def select(self, index: RowIndex) -> list[int]:
        """Ids of the matching rows, in rank order, using the index (fast path)."""
        candidates: set[int] | None = None
        for term in self.shapes:
            found = index.rows_with_shape(term)
            candidates = found if candidates is None else candidates & found
        index.index_some()
        ids = range(len(index)) if candidates is None else sorted(candidates)
        names, kinds = index.names, index.kinds
        for word in self.words:
            ids = [i for i in ids if word in names[i]]
        for kind in self.kinds:
            ids = [i for i in ids if kinds[i] == kind]
        return list(ids)

    def matches(self, row: dict) -> bool:
        name = row["operator"].lower()
        if any(word not in name for word in self.words):
            return False
        if any(kind != row.get("kind") for kind in self.kinds):
            return False
        inputs = row["input_shapes"]
        return all(any(term.matches_shape(shape) for shape in inputs) for term in self.shapes)


class RowIndex:
    """Per-row facts the filter needs: lower-cased names, kinds, and an inverted index from
    each flat input shape to the rows that have it, itself indexed by (rank, position,
    size): a term such as ``[4, *]`` looks up the shapes of rank 2 whose first dimension
    is 4 instead of testing every shape.

    Rows are indexed lazily, when a filter first needs them (or when the app has an idle
    moment, :meth:`index_some`): loading 100k rows does not wait for the index.
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.by_shape: dict[tuple, list[int]] = {}
        self.by_rank: dict[int, list[tuple]] = {}
        self.by_dim: dict[tuple[int, int, int], list[tuple]] = {}
        self._rows: list[dict] = []
        # Each operator's lower-cased name, made once: 100k rows name a few hundred
        # operators, and a string per row cost ~6 MiB.
        self._lowered: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, rows: Sequence[dict]) -> None:
        self._rows.extend(rows)

    @property
    def complete(self) -> bool:
        return len(self.names) == len(self._rows)

    def index_some(self, limit: int | None = None) -> None:
        """Index up to ``limit`` rows not yet indexed (all of them by default)."""
        start = len(self.names)
        end = len(self._rows) if limit is None else min(len(self._rows), start + limit)
        batch = self._rows[start:end]
        lowered = self._lowered
        for name in [row["operator"] for row in batch]:
            self.names.append(lowered.get(name) or lowered.setdefault(name, name.lower()))
        self.kinds.extend(row.get("kind", "") for row in batch)
        by_shape = self.by_shape
        for row_id, row in enumerate(batch, start):
            for shape in row["input_shapes"]:
                if type(shape) is not list:
                    continue
                key = tuple(shape)
                try:
                    ids = by_shape.get(key)
                except TypeError:  # a nested list (a tensor list input): not a flat shape
                    continue
                if ids is None:
                    by_shape[key] = [row_id]
                    self._index_shape(key)
                elif ids[-1] != row_id:  # the same shape twice in one row counts once
                    ids.append(row_id)

    def _index_shape(self, shape: tuple) -> None:
        rank = len(shape)
        self.by_rank.setdefault(rank, []).append(shape)
        for position, size in enumerate(shape):
            self.by_dim.setdefault((rank, position, size), []).append(shape)

    def rows_with_shape(self, term: ShapeTerm) -> set[int]:
        self.index_some()
        rank = len(term.dims)
        fixed = [(position, size) for position, size in enumerate(term.dims) if size is not ANY]
        if fixed:
            # Start from the fewest shapes one fixed dimension allows, then check the rest.
            candidates = min(
                (self.by_dim.get((rank, position, size), []) for position, size in fixed), key=len
            )
        else:
            candidates = self.by_rank.get(rank, [])
        found: set[int] = set()
        for shape in candidates:
            if all(shape[position] == size for position, size in fixed):
                found.update(self.by_shape[shape])
        return found


def _parse_dim(text: str, source: str) -> int | None:
    text = text.strip()
    if text == "*":
        return ANY
    if text.isdigit():
        return int(text)
    raise FilterError(f"{source}: {text!r} is not a dimension (a number or *)")


def _tokens(text: str) -> list[str]:
    """Split on spaces outside brackets; an unclosed bracket is an error."""
    tokens, current, depth = [], [], 0
    for char in text:
        if char == "[":
            depth += 1
            if depth > 1:
                raise FilterError("nested brackets: write one shape as [8, 16, 64]")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise FilterError("a ] without its [")
        if char.isspace() and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(char)
    if depth:
        raise FilterError("unclosed [: write a shape as [8, 16, 64]")
    if current:
        tokens.append("".join(current))
    return tokens


def parse_filter(text: str) -> Filter:
    """Parse the filter box's text; raises FilterError on a malformed term."""
    words, shapes, kinds = [], [], []
    for token in _tokens(text):
        if token.startswith("["):
            if not token.endswith("]"):
                raise FilterError(f"{token}: a shape ends with ]")
            inner = token[1:-1].strip()
            dims = () if not inner else tuple(_parse_dim(p, token) for p in inner.split(","))
            shapes.append(ShapeTerm(dims))
        elif _DIMS_TOKEN.match(token.lower()):
            shapes.append(ShapeTerm(tuple(_parse_dim(p, token) for p in token.lower().split("x"))))
        elif token.lower().startswith("kind:"):
            kind = token[5:].lower()
            if kind not in KINDS:
                raise FilterError(f"{token}: kind is one of {', '.join(KINDS)}")
            kinds.append(kind)
        else:
            words.append(token.lower())
    return Filter(text, tuple(words), tuple(shapes), tuple(kinds))


# Sorting ----------------------------------------------------------------------------------

SORT_FIELDS = {
    "rank": "rank",
    "cpu": "cpu_self_seconds",
    "device": "device_self_seconds",
    "calls": "calls",
    "bytes": "cpu_net_bytes",
}
SORT_LABELS = {
    "rank": "rank",
    "delta": "CPU delta",
    "ratio": "ratio",
    "cpu": "CPU self",
    "device": "device self",
    "calls": "calls",
    "bytes": "net bytes",
}


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


def has_device_time(rows: Sequence[dict]) -> bool:
    return any(row.get("device_self_seconds") is not None for row in rows)


ValueOf = Callable[[dict], object]


def field_getters(fields: dict[str, str]) -> dict[str, ValueOf]:
    return {key: (lambda row, name=name: row.get(name)) for key, name in fields.items()}


ROW_SORTS: dict[str, ValueOf] = field_getters({k: v for k, v in SORT_FIELDS.items() if k != "rank"})


def sorted_indices(
    rows: Sequence[dict], indices: list[int], sort: Sort, getters: dict[str, ValueOf] | None = None
) -> list[int]:
    """``indices`` ordered by ``sort``; rows with a missing (None) figure always go last.

    The reference for :class:`SortOrders` (tests compare the two); ties keep rank order.
    """
    if sort.key == "rank":
        return indices if sort.descending else indices[::-1]
    value_of = (getters or ROW_SORTS)[sort.key]
    values = {i: value_of(rows[i]) for i in indices}
    present = [i for i in indices if values[i] is not None]
    missing = [i for i in indices if values[i] is None]
    present.sort(key=values.__getitem__, reverse=sort.descending)
    return present + missing


class _EmptyMapping(dict):
    """An empty dict that refuses to change, shared by every row without callers."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("rows share this empty mapping: copy it to change it")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]


class _EmptySequence(list):
    """An empty list that refuses to change, shared by every row without notes."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("rows share this empty list: copy it to change it")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore[assignment]


NO_CALLERS: dict = _EmptyMapping()
NO_NOTES: list = _EmptySequence()
SHARED_TEXTS = ("operator", "kind")


def share_common_values(rows: Sequence[dict], texts: dict[str, str]) -> None:
    """Let rows hold one copy of what many of them hold: operator names, kinds, and the
    empty callers and diagnostics most rows have.

    Decoded JSON gives every row its own: ~23 MiB of copies at 100k rows, which stay
    (freed later, they would leave the allocator's arenas as full). Run on each batch as
    it arrives, the copies freed are reused by the next batch's decoding instead.
    ``texts`` carries the strings kept so far. Values stay equal: rows compare, export
    and save as before.
    """
    for row in rows:
        for name in SHARED_TEXTS:
            text = row.get(name)
            if type(text) is str:
                row[name] = texts.setdefault(text, text)
        if row.get("callers") == {}:
            row["callers"] = NO_CALLERS
        if row.get("diagnostics") == []:
            row["diagnostics"] = NO_NOTES


class SortOrders:
    """Every row's position under each sort, computed once per key and reused.

    Sorting 100k rows costs tens of milliseconds; a keystroke that re-sorts a filtered
    subset should not. The full order is sorted once per key and direction, and a subset
    takes its rows from it in one pass. The app computes the orders in idle time once the
    rows are in, so even the first press of a sort key does not sort.
    """

    def __init__(self, rows: Sequence[dict], getters: dict[str, ValueOf]):
        self.rows = rows
        self.getters = getters
        self._values: dict[str, list] = {}
        self._orders: dict[tuple[str, bool], list[int]] = {}
        self._ids: list[int] = []

    def order(self, key: str, descending: bool) -> list[int]:
        """All row ids in this sort: measured figures in order (ties in rank order), then
        the rows whose figure is missing, in rank order.

        Every order holds the same int objects (``_ids``): built with ``enumerate``, each
        of the eight orders of 100k rows had 100k ints of its own, ~3 MiB apiece.
        """
        cached = self._orders.get((key, descending))
        if cached is None:
            if len(self._ids) != len(self.rows):
                self._ids = list(range(len(self.rows)))
            values = self._values.get(key)
            if values is None:
                value_of = self.getters[key]
                values = self._values[key] = [value_of(row) for row in self.rows]
            present = list(compress(self._ids, map(is_not, values, repeat(None))))
            present.sort(key=values.__getitem__, reverse=descending)
            cached = present + list(compress(self._ids, map(is_, values, repeat(None))))
            self._orders[(key, descending)] = cached
        return cached

    def subset(self, key: str, descending: bool, indices: list[int]) -> list[int]:
        """``indices`` in this sort (the same result as :func:`sorted_indices`)."""
        order = self.order(key, descending)
        if len(indices) == len(self.rows):
            return list(order)
        keep = bytearray(len(self.rows))
        for index in indices:
            keep[index] = 1
        return [index for index in order if keep[index]]


@dataclass
class RowView:
    """The rows a table shows: all rows, a filter, a sort, and a selection (by row id).

    Row ids are positions in ``rows`` (the report's rank order), so a selection survives
    filtering and sorting.
    """

    rows: list[dict] = field(default_factory=list)
    filter: Filter = field(default_factory=Filter)
    sort: Sort = field(default_factory=Sort)
    selected: set[int] = field(default_factory=set)
    visible: list[int] = field(default_factory=list)

    index: RowIndex = field(default_factory=RowIndex)
    sort_getters: dict[str, ValueOf] | None = None  # sort key -> value; None: report rows

    def __post_init__(self) -> None:
        self._texts: dict[str, str] = {}  # see share_common_values
        share_common_values(self.rows, self._texts)
        self.index.add(self.rows)
        self._orders = SortOrders(self.rows, self.sort_getters or ROW_SORTS)
        self.refresh()

    def refresh(self) -> None:
        if self.filter.empty:
            indices = list(range(len(self.rows)))
        else:
            indices = self.filter.select(self.index)
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

    def extend(self, new_rows: Sequence[dict]) -> None:
        """Add rows that arrive in rank order. In rank order with no filter, the new rows
        simply go at the end, so a stream of batches costs nothing per batch."""
        start = len(self.rows)
        share_common_values(new_rows, self._texts)
        self.rows.extend(new_rows)
        self.index.add(new_rows)
        self._orders = SortOrders(self.rows, self._orders.getters)
        if self.filter.empty and self.sort == Sort():
            self.visible.extend(range(start, len(self.rows)))
        else:
            self.refresh()

    def set_rows(self, rows: list[dict]) -> None:
        share_common_values(rows, self._texts)
        self.rows = rows
        self.index = RowIndex()
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
        return self.visible != before

    def set_sort(self, sort: Sort) -> None:
        self.sort = sort
        self.refresh()

    def visible_rows(self) -> list[dict]:
        """The rows shown, in view order."""
        return [self.rows[i] for i in self.visible]

    def row_at(self, position: int) -> dict | None:
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

    def rows_to_export(self, highlighted: int) -> list[dict]:
        """The selected rows in view order, else the highlighted row."""
        if self.selected:
            chosen = [i for i in self.visible if i in self.selected]
            chosen += sorted(self.selected.difference(self.visible))
            return [self.rows[i] for i in chosen]
        row = self.row_at(highlighted)
        return [row] if row is not None else []
