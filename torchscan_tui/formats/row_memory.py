"""Decoded rows held in less memory, as the same plain dicts and lists (issue 31).

A decoded JSON object is a dict with a hash table of its own: ~470 bytes for a row's 15
keys, the keys' slots repeated in every row. CPython keeps the keys of one class's
instances once, in the class (a *split* table), each instance's dict holding its values
alone; a copy of such a dict is a plain ``dict`` that shares the keys too. :func:`compact`
rebuilds a row as such a copy (~340 bytes): the same keys in the same order, the same
values, the same type, so every reader, writer and comparison of rows is unchanged; a key
added later makes that one dict ordinary again. Where CPython does not split (another
version), the copy is an ordinary dict. Not for small dicts: a split table's values have
room for 30 keys, more than a 4- or 5-key dict's own table takes (a call site, a spread).

Input shapes repeat across rows (the operators of a model pass the same tensors along: a
real report's 310 rows hold 709 shapes, 34 of them distinct): :func:`shared_shapes` gives
equal shapes one list. No reader changes a row's shapes. Equal times share one float
where a row repeats a figure (:func:`same_float`).
"""

from __future__ import annotations

from typing import Any

SPLIT_KEYS_MAX = 30  # CPython shares no more keys than this (SHARED_KEYS_MAX_SIZE)
LAYOUTS_KEPT = 64  # distinct key orders kept (a report's rows have one or two)
SHAPES_KEPT = 1 << 16  # distinct shapes remembered before the memory starts over

_LAYOUTS: dict[tuple[str, ...], dict[str, Any]] = {}
_SHAPES: dict[tuple, list] = {}


def _layout(keys: tuple[str, ...]) -> dict[str, Any] | None:
    """An instance dict of a class of its own with ``keys`` in this order (its values
    None), or None past the limits: copied, it gives a dict that shares its keys."""
    layout = _LAYOUTS.get(keys)
    if layout is None:
        if len(_LAYOUTS) >= LAYOUTS_KEPT or len(keys) > SPLIT_KEYS_MAX:
            return None
        holder = type("RowLayout", (), {})()
        for key in keys:
            setattr(holder, key, None)  # the attribute way: keys go to the class's table
        layout = _LAYOUTS[keys] = holder.__dict__
    return layout


def compact(mapping: dict[str, Any]) -> dict[str, Any]:
    """``mapping`` as an equal dict whose keys are shared with others of its layout."""
    try:
        layout = _layout(tuple(mapping))
    except (TypeError, AttributeError):  # a key a class cannot hold (``__weakref__``)
        return mapping
    if layout is None:
        return mapping
    copy = layout.copy()
    copy.update(mapping)
    return copy


ONE = 1.0  # the share of a row's time its only call site has: one object for every row


def same_float(value: object, other: object) -> bool:
    """Whether ``value`` may be replaced by ``other``: both floats, equal, and written
    alike (0.0 and -0.0 are equal, but not the same JSON)."""
    return (
        type(value) is float
        and type(other) is float
        and value == other
        and (value != 0.0 or str(value) == str(other))
    )


def shared_shapes(shapes: list) -> list:
    """``shapes`` with each flat shape the one list of its dims. Only for a checked
    row's shapes (``Shape``: a dim is an int or a list, never a float or a bool, which
    would equal an int): there, a shape that hashes as a tuple is a flat list of ints."""
    kept = _SHAPES
    if len(kept) >= SHAPES_KEPT:
        kept.clear()
    out = shapes[:]  # a copy of its exact size: appending (or list()) leaves room for more
    for index, shape in enumerate(out):
        if type(shape) is list:
            try:
                out[index] = kept.setdefault(tuple(shape), shape)
            except TypeError:  # a nested shape (a list of tensors): its own
                pass
    return out
