"""Filtering operator rows: the filter language and the index it runs on (pure).

The filter language, as the UI's filter box takes it:

* ``[8, 16, 64]`` or ``8x16x64`` matches rows with an input of exactly that shape;
  ``*`` matches any one dimension (``[*, 64]``, ``*x64``); ``[]`` a scalar input;
* ``kind:annotation`` (or any other of :data:`~.records.ROW_KINDS`) matches the row kind;
* any other word matches operator names, case-insensitively, as a substring; ``*`` and
  ``?`` make it a wildcard pattern over the whole name (``*norm*``, ``aten::?dd``);
* ``a|b`` matches either; ``-word`` or ``!word`` keeps the rows that do *not* match
  (``-[memory]``, ``!aten::view|aten::reshape``);
* several terms must all match.

A bad filter raises :class:`FilterError` with a message for the user; callers then show
every row rather than silently hiding some.
"""

from __future__ import annotations

import fnmatch
import re
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress
from typing import Any

from torchscan_tui.analysis.records import ROW_KINDS

ANY = None  # a wildcard dimension
_DIMS_TOKEN = re.compile(r"^(\d+|\*)(x(\d+|\*))+$")
KINDS = ROW_KINDS
# Every key re-runs the filter over every row: a pasted 100 KB (33k wildcard terms) froze
# the app for 80 s. A filter is a few terms; these bound the work one key can ask for.
MAX_FILTER_CHARS = 500
MAX_TERMS = 32


class FilterError(ValueError):
    """The filter text cannot be understood; the message says why, for the user."""


@dataclass(frozen=True)
class ShapeTerm:
    dims: tuple[int | None, ...]

    def matches_shape(self, shape: object) -> bool:
        if not isinstance(shape, list) or len(shape) != len(self.dims):
            return False
        return all(want is ANY or want == got for want, got in zip(self.dims, shape, strict=True))


@dataclass(frozen=True)
class NameTerm:
    """A name term: any of its alternatives matches (a substring, or a wildcard pattern
    over the whole lower-cased name); ``negated`` keeps the rows none matches."""

    alternatives: tuple[str, ...]
    negated: bool = False

    def matcher(self) -> Callable[[str], bool]:
        """A test of one lower-cased name, built once per filter."""
        patterns = [re.compile(fnmatch.translate(alt)) for alt in self.alternatives
                    if "*" in alt or "?" in alt]  # fmt: skip
        plain = [alt for alt in self.alternatives if "*" not in alt and "?" not in alt]

        def matches(name: str) -> bool:
            found = any(alt in name for alt in plain) or any(p.match(name) for p in patterns)
            return found != self.negated

        return matches


@dataclass(frozen=True)
class Filter:
    """A parsed filter: every term must match."""

    text: str = ""
    words: tuple[NameTerm, ...] = ()
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
        kinds = index.kinds
        for word in self.words:
            ids = index.matching(word, ids)
        for kind in self.kinds:
            ids = [i for i in ids if kinds[i] == kind]
        return ids if type(ids) is list else list(ids)  # a word's list is new: not copied


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
        # Row numbers as 4-byte arrays, not an int object each (~3 MiB at 100k rows).
        self.by_shape: dict[tuple, array[int]] = {}
        self.by_rank: dict[int, list[tuple]] = {}
        self.by_dim: dict[tuple[int, int, int], list[tuple]] = {}
        self._rows: list[Mapping[str, Any]] = []
        # Each operator's lower-cased name, made once: 100k rows name a few hundred
        # operators, and a string per row cost ~6 MiB.
        self._lowered: dict[str, str] = {}
        # Each row's lower-cased name as a byte (its number among the distinct names),
        # while there are no more than 256 of them; None past that.
        self._codes: bytearray | None = bytearray()
        self._numbers: dict[str, int] = {}
        # The rows of each distinct name, by its number: a word that picks few rows
        # gathers theirs instead of passing over every row (4-byte arrays, ~0.4 MiB).
        self._rows_of: list[array[int]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def empty_copy(self) -> RowIndex:
        """An index of the same kind, of no rows yet (rows replaced)."""
        return type(self)()

    def matching(self, word: NameTerm, ids: Sequence[int]) -> list[int]:
        """The ids among ``ids`` whose name ``word`` matches (indexed rows).

        Each distinct name is tested once (100k rows name a few hundred operators). Over
        every row, a word that picks no more than a quarter of them gathers the rows of
        the names it matches (a word being typed mostly does: ~0.3 ms for 11k of 100k
        rows); otherwise the rows are picked in C: with the names as a byte a row, one
        ``translate`` makes the rows' verdicts (~2 ms a key at 100k rows); past 256
        names, a lookup a row (~5 ms); testing each row's name was ~90."""
        matches, codes = word.matcher(), self._codes
        verdicts = bytes(map(matches, self._numbers))
        every_row = ids == range(len(self.names))
        if every_row:
            picked = list(compress(self._rows_of, verdicts))
            if sum(map(len, picked)) <= len(self.names) // 4:
                found = list(chain.from_iterable(picked))
                found.sort()  # each name's rows are in order: a merge of sorted runs
                return found
        if codes is not None:
            verdict_of_code = codes.translate(verdicts.ljust(256, b"\0"))
            if every_row:
                return list(compress(ids, verdict_of_code))
            return list(compress(ids, map(verdict_of_code.__getitem__, ids)))
        verdict = dict(zip(self._numbers, verdicts, strict=True))
        return list(compress(ids, map(verdict.__getitem__, map(self.names.__getitem__, ids))))

    def add(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self._rows.extend(rows)

    @property
    def complete(self) -> bool:
        return len(self.names) == len(self._rows)

    def index_some(self, limit: int | None = None) -> None:
        """Index up to ``limit`` rows not yet indexed (all of them by default)."""
        start = len(self.names)
        end = len(self._rows) if limit is None else min(len(self._rows), start + limit)
        batch = self._rows[start:end]
        lowered, numbers = self._lowered, self._numbers
        for name in [row["operator"] for row in batch]:
            self.names.append(lowered.get(name) or lowered.setdefault(name, name.lower()))
        added = self.names[start:]
        rows_of = self._rows_of
        for row_id, name in enumerate(added, start):  # a number for each distinct name
            number = numbers.setdefault(name, len(numbers))
            if number == len(rows_of):
                rows_of.append(array("i"))
            rows_of[number].append(row_id)
        if self._codes is not None:
            if len(numbers) > 256:
                self._codes = None
            else:
                self._codes.extend(map(numbers.__getitem__, added))
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
                    by_shape[key] = array("i", (row_id,))
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
    tokens: list[str] = []
    current: list[str] = []
    depth = 0
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
    """Parse the filter box's text; raises FilterError on a malformed term, or on a
    filter longer than :data:`MAX_FILTER_CHARS` or of more than :data:`MAX_TERMS` terms."""
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"a filter is at most {MAX_FILTER_CHARS} characters")
    words, shapes, kinds = [], [], []
    tokens = _tokens(text)
    alternatives = sum(token.count("|") + 1 for token in tokens)
    if alternatives > MAX_TERMS:
        raise FilterError(f"a filter has at most {MAX_TERMS} terms (words, shapes, a|b parts)")
    for token in tokens:
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
            words.append(_name_term(token))
    return Filter(text, tuple(words), tuple(shapes), tuple(kinds))


def _name_term(token: str) -> NameTerm:
    """``word``, ``a|b``, ``*norm*``, and any of them after ``-`` or ``!``."""
    negated = token[:1] in ("-", "!") and len(token) > 1
    body = token[1:] if negated else token
    alternatives = tuple(alt.lower() for alt in body.split("|") if alt)
    if not alternatives:
        raise FilterError(f"{token}: nothing to match: write a name, or a|b")
    return NameTerm(alternatives, negated)
