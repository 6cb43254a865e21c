"""A row's call sites and its per-step spread held as small read-only mappings (issue 31).

A decoded call site is a dict of four keys (~200 bytes with its table) and a per-step
spread a dict of five with four floats of its own (~300 bytes): at 100k rows, ~33 and ~27
MiB, a third of the rows' memory in the UI. Rows only read them once accepted (the
detail pane, the export, the comparison), so :func:`compact_site` and
:func:`compact_spread` hold each as an immutable :class:`~collections.abc.Mapping` with
slots: a site's values in four slots (64 bytes), a spread's figures packed as doubles in
one ``bytes`` (~130 bytes, no float objects). Either reads, iterates, compares equal to
and converts (``dict(x)``) as the dict it replaces, in the same key order, so what is
written from it is the same JSON; JSON writers take it through :func:`as_plain`.

Only the shapes a report writes are compacted: anything else (another key, a value of
another type, a NaN written by an older version) stays the dict it was.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import Any

_ABSENT: Any = object()  # a slot whose key the record does not have


class CompactSite(Mapping[str, Any]):
    """A call site (analysis/records.py ``SiteRow``): where from, its time, its share of
    the row's, and its stack where one was kept."""

    __slots__ = ("_site", "_seconds", "_share", "_stack")
    _KEYS = ("site", "cpu_self_seconds", "share", "stack")

    def __init__(self, site: str, seconds: float, share: float | None, stack: str = _ABSENT):
        self._site, self._seconds, self._share, self._stack = site, seconds, share, stack

    def __getitem__(self, key: str) -> Any:
        if key == "site":
            return self._site
        if key == "cpu_self_seconds":
            return self._seconds
        if key == "share":
            return self._share
        if key == "stack" and self._stack is not _ABSENT:
            return self._stack
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS if self._stack is not _ABSENT else self._KEYS[:3])

    def __len__(self) -> int:
        return 3 if self._stack is _ABSENT else 4

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self) -> tuple:  # pickled (a rank pool's report) as what it holds
        return (_site_from, (dict(self),))


def _site_from(site: dict) -> CompactSite | dict:
    return compact_site(site)


_SPREAD_KEYS = ("mean", "min", "median", "max", "steps")
_SPREAD_KEYS_NO_MEAN = _SPREAD_KEYS[1:]
_FIGURES = struct.Struct("=4dq")  # mean, min, median, max; steps
_FIGURES_NO_MEAN = struct.Struct("=3dq")


class CompactSpread(Mapping[str, Any]):
    """A row's CPU self time per step (``StepSpread``): its figures packed as doubles,
    each read back as the float it was (a double holds a float exactly)."""

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
        try:
            index = keys.index(key)
        except ValueError:
            raise KeyError(key) from None
        return self._values()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def items(self):  # one unpacking, not one per key
        return dict(zip(self._keys(), self._values(), strict=True)).items()

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self) -> tuple:
        return (CompactSpread, (self._packed,))


def _is_float(value: object) -> bool:
    return type(value) is float and value == value  # not NaN: it would not compare equal


def compact_site(site: object) -> Any:
    """``site`` as a :class:`CompactSite` when it is a call site as reports write it
    (its keys in their order, their types); otherwise ``site`` itself."""
    if type(site) is not dict:
        return site
    keys = tuple(site)
    if keys != CompactSite._KEYS and keys != CompactSite._KEYS[:3]:
        return site
    text, seconds, share = site["site"], site["cpu_self_seconds"], site["share"]
    stack = site.get("stack", _ABSENT)
    if (
        type(text) is not str
        or not _is_float(seconds)
        or not (share is None or _is_float(share))
        or not (stack is _ABSENT or type(stack) is str)
    ):
        return site
    return CompactSite(text, seconds, share, stack)


def compact_spread(spread: object) -> Any:
    """``spread`` as a :class:`CompactSpread` when it is a per-step spread as reports
    write it (mean where written, min, median, max as floats, steps as an int);
    otherwise ``spread`` itself."""
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
    steps = values[-1]
    if not all(_is_float(value) for value in values[:-1]) or type(steps) is not int:
        return spread
    try:
        return CompactSpread(layout.pack(*values))
    except struct.error:  # a step count past 64 bits
        return spread


def as_plain(value: object) -> object:
    """A compact record as the dict it stands for (a JSON encoder's ``default``);
    anything else cannot be written, as before."""
    if isinstance(value, (CompactSite, CompactSpread)):
        return dict(value.items())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
