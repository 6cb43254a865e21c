"""A row's call sites and its per-step spread held as small read-only mappings (issue 31).

A decoded call site is a dict of four keys (~200 bytes with its table) and a per-step
spread a dict of five with four floats of its own (~300 bytes): at 100k rows, ~33 and
~27 MiB, a third of the rows' memory in the UI. Rows only read them once accepted (the
detail pane, the export, the comparison), so accepting them (``shared_sites`` in
report_schema.py, :func:`compact_spread`) holds each as a read-only
:class:`~collections.abc.Mapping`. Either reads, iterates, compares equal to and converts
(``dict(x)``) as the dict it replaces, in the same key order, so what is written from it
is the same JSON.

* A site is a frozen msgspec ``Struct`` (48 bytes) made with ``gc=False``: never tracked
  by the cyclic collector, where every instance of a Python class is, and msgspec writes
  it itself (a missing stack left out, as the dict had none). Its values are held as
  decoded.
* A spread packs its figures as doubles in one ``bytes`` (~130 bytes with its object,
  no float objects; a struct of floats held 2.4 MiB more at 100k rows, past the UI's 150
  MiB). msgspec cannot write it: the channel's encoder and the JSON writers take it
  through :func:`as_plain`. Only floats pack exactly (an int would come back a float) and
  NaN would no longer equal itself: a spread of other figures stays a dict.

Only the key layouts a report writes are compacted: another key, or the keys in another
order, and the dict stays as it was.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import Any, cast

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
    the row's, and its stack where one was kept. Made from a checked dict its values are
    held as they were; the channel decodes sites straight into it (its fields' types are
    ``SiteRow``'s, checked as decoded)."""

    site: str
    cpu_self_seconds: float
    share: float
    stack: str | msgspec.UnsetType = UNSET

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
SITE_KEYS = CompactSite.__struct_fields__  # the layouts a site is made compact from
SITE_KEYS_NO_STACK = SITE_KEYS[:3]

_SPREAD_KEYS = ("mean", "min", "median", "max", "steps")
_SPREAD_KEYS_NO_MEAN = _SPREAD_KEYS[1:]
_FIGURES = struct.Struct("=4dq")  # mean, min, median, max; steps
_FIGURES_NO_MEAN = struct.Struct("=3dq")


class CompactSpread(Mapping[str, Any]):
    """A row's CPU self time per step (``StepSpread``): its figures packed as doubles,
    each read back as the float it was (a double holds a float exactly), so no float
    object each (a struct of floats held 2.4 MiB more at 100k rows, past the UI's 150).
    msgspec cannot write it: the channel's encoder and the JSON writers take it through
    :func:`as_plain`."""

    __slots__ = ("_packed",)

    def __init__(self, packed: bytes):
        self._packed = packed

    def _keys(self) -> tuple[str, ...]:
        return _SPREAD_KEYS if len(self._packed) == _FIGURES.size else _SPREAD_KEYS_NO_MEAN

    def _values(self) -> tuple:
        layout = _FIGURES if len(self._packed) == _FIGURES.size else _FIGURES_NO_MEAN
        return layout.unpack(self._packed)

    def __getitem__(self, key: str) -> Any:
        keys = self._keys()
        if key not in keys:
            raise KeyError(key)
        return self._values()[keys.index(key)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def items(self):  # one unpacking, not one per key
        return dict(zip(self._keys(), self._values(), strict=True)).items()

    __repr__ = _repr

    def __reduce__(self) -> tuple:
        return (CompactSpread, (self._packed,))


def compact_spread(spread: object) -> Any:
    """``spread`` as a :class:`CompactSpread` when it is a per-step spread as reports
    write it (mean where written, min, median, max as floats, steps as an int);
    otherwise ``spread`` itself. Packed as doubles, so only floats (an int would come
    back a float) and none NaN (it would no longer equal itself)."""
    if type(spread) is not dict:
        return spread
    keys = tuple(spread)
    if keys == _SPREAD_KEYS:
        layout = _FIGURES
    elif keys == _SPREAD_KEYS_NO_MEAN:
        layout = _FIGURES_NO_MEAN
    else:
        return spread
    values = tuple(spread.values())
    for figure in values[:-1]:
        if type(figure) is not float or figure != figure:
            return spread
    if type(values[-1]) is not int:
        return spread
    try:
        return CompactSpread(layout.pack(*values))
    except struct.error:  # a step count past 64 bits
        return spread


class ReceivedSpread(msgspec.Struct, gc=False):
    """A per-step spread as the channel decodes it (``StepSpread``'s fields, checked as
    decoded), only until :func:`spread_of_received` packs it."""

    min: float
    median: float
    max: float
    steps: int
    mean: float | msgspec.UnsetType = UNSET


def spread_of_received(spread: ReceivedSpread) -> Any:
    """A decoded spread packed as a :class:`CompactSpread` (its figures are floats, and
    JSON carries no NaN), or as its dict where its step count is past 64 bits."""
    try:
        if spread.mean is UNSET:
            packed = _FIGURES_NO_MEAN.pack(spread.min, spread.median, spread.max, spread.steps)
        else:
            packed = _FIGURES.pack(spread.mean, spread.min, spread.median, spread.max, spread.steps)
    except struct.error:
        figures = {key: getattr(spread, key) for key in _SPREAD_KEYS}
        return {key: value for key, value in figures.items() if value is not UNSET}
    return CompactSpread(packed)


def is_compact(value: object) -> bool:
    return type(value) is CompactSite or type(value) is CompactSpread


def as_plain(value: object) -> object:
    """A compact record as the dict it stands for (a JSON encoder's ``default``);
    anything else cannot be written, as before."""
    if is_compact(value):
        return dict(cast(Mapping[str, Any], value).items())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
