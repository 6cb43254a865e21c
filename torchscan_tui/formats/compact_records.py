"""A row's call sites and its per-step spread held as small read-only mappings (issue 31).

A decoded call site is a dict of four keys (~200 bytes with its table) and a per-step
spread a dict of five (~200 bytes, with its floats ~300): at 100k rows, ~33 and ~27 MiB, a
third of the rows' memory in the UI. Rows only read them once accepted (the detail pane,
the export, the comparison), so :func:`compact_site` and :func:`compact_spread` hold each
as a frozen msgspec ``Struct`` that reads as a :class:`~collections.abc.Mapping`: a site in
48 bytes, a spread in 56 (its floats apart). Either reads, iterates, compares equal to and
converts (``dict(x)``) as the dict it replaces, in the same key order, holding the same
values, so what is written from it is the same JSON: msgspec writes a ``Struct`` itself
(a missing stack or mean left out, as the dict had none), and the stdlib's JSON writers
take it through :func:`as_plain`.

Why a ``Struct`` and not a class with ``__slots__``: a struct made with ``gc=False`` is
never tracked by the cyclic collector (it holds no container), where every instance of a
Python class is. 226k tracked objects more made each collection between two batches of
streamed rows walk them: 100k rows arrived in ~1.9x a bare msgspec pipe's time instead of
~1.2x. A decoded dict of floats and strings is untracked by the collector's first pass.

Only the key layouts a report writes are compacted: another key, or the keys in another
order, and the dict stays as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

UNSET: Any = msgspec.UNSET  # a field whose key the record does not have


def _getitem(self: Any, key: str) -> Any:
    if key in self.__struct_fields__:
        value = getattr(self, key)
        if value is not UNSET:
            return value
    raise KeyError(key)


def _iter(self: Any) -> Iterator[str]:
    return (key for key in self.__struct_fields__ if getattr(self, key) is not UNSET)


def _len(self: Any) -> int:
    return sum(getattr(self, key) is not UNSET for key in self.__struct_fields__)


def _eq(self: Any, other: object) -> bool:
    if isinstance(other, Mapping):
        return dict(self.items()) == dict(other.items())
    return NotImplemented


def _repr(self: Any) -> str:
    return repr(dict(self.items()))


class CompactSite(msgspec.Struct, frozen=True, gc=False, eq=False, omit_defaults=True):
    """A call site (analysis/records.py ``SiteRow``): where from, its time, its share of
    the row's, and its stack where one was kept. Values are held as decoded."""

    site: Any
    cpu_self_seconds: Any
    share: Any
    stack: Any = UNSET

    __getitem__ = _getitem
    __iter__ = _iter
    __len__ = _len
    __eq__ = _eq
    __repr__ = _repr
    __contains__ = Mapping.__contains__
    keys = Mapping.keys
    items = Mapping.items
    values = Mapping.values
    get = Mapping.get


class CompactSpread(
    msgspec.Struct, frozen=True, gc=False, eq=False, omit_defaults=True, kw_only=True
):
    """A row's CPU self time per step (``StepSpread``), its mean where one was written."""

    mean: Any = UNSET
    min: Any
    median: Any
    max: Any
    steps: Any

    __getitem__ = _getitem
    __iter__ = _iter
    __len__ = _len
    __eq__ = _eq
    __repr__ = _repr
    __contains__ = Mapping.__contains__
    keys = Mapping.keys
    items = Mapping.items
    values = Mapping.values
    get = Mapping.get


Mapping.register(CompactSite)
Mapping.register(CompactSpread)

SITE_KEYS = CompactSite.__struct_fields__
SITE_KEYS_NO_STACK = SITE_KEYS[:3]
_SITE_LAYOUTS = frozenset({SITE_KEYS, SITE_KEYS_NO_STACK})
_SPREAD_LAYOUTS = frozenset({CompactSpread.__struct_fields__, CompactSpread.__struct_fields__[1:]})


def compact_site(site: object) -> Any:
    """``site`` as a :class:`CompactSite` when it has a call site's keys in their order
    (with or without its stack); otherwise ``site`` itself."""
    if type(site) is dict and tuple(site) in _SITE_LAYOUTS:
        return CompactSite(*site.values())
    return site


def compact_spread(spread: object) -> Any:
    """``spread`` as a :class:`CompactSpread` when it has a per-step spread's keys in
    their order (with or without its mean); otherwise ``spread`` itself."""
    if type(spread) is dict and tuple(spread) in _SPREAD_LAYOUTS:
        return CompactSpread(**spread)
    return spread


def is_compact(value: object) -> bool:
    return type(value) is CompactSite or type(value) is CompactSpread


def as_plain(value: object) -> object:
    """A compact record as the dict it stands for (a JSON encoder's ``default``);
    anything else cannot be written, as before."""
    if is_compact(value):
        return dict(value.items())  # type: ignore[attr-defined]
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
