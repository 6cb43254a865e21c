"""Sets of time intervals as sorted, disjoint lists: union, difference, intersection.

The summaries count each moment once (the step overview's categories, the device
timeline's busy and idle time), which is interval arithmetic. An interval is
``(start_ns, end_ns)``; a *set* is a list of them sorted by start with no two
overlapping or touching, as :func:`union` makes it. Every function but :func:`union`
takes and returns sets; each is one linear pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Interval = tuple[int, int]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The set covered by any of ``intervals`` (touching ones merge, as the TensorBoard
    plugin's ``merge_ranges`` and HTA's ``merge_kernel_intervals`` merge them)."""
    return _merged(sorted(intervals))


def union_of(starts: Sequence[int], ends: Sequence[int]) -> list[Interval]:
    """:func:`union` of the intervals ``(starts[i], ends[i])``, given as two columns (a
    million spans as two 8-byte arrays, not a million tuples: ~110 MiB less)."""
    order = sorted(range(len(starts)), key=ends.__getitem__)
    order.sort(key=starts.__getitem__)  # stable: by start, then end, as tuples sort
    return _merged(zip(map(starts.__getitem__, order), map(ends.__getitem__, order), strict=True))


def _merged(ordered: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in ordered:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def minus(kept: list[Interval], taken: list[Interval]) -> list[Interval]:
    """``kept`` without the parts in ``taken``."""
    left: list[Interval] = []
    j = 0
    for start, end in kept:
        while j < len(taken) and taken[j][1] <= start:
            j += 1
        k, cursor = j, start
        while k < len(taken) and taken[k][0] < end:
            if taken[k][0] > cursor:
                left.append((cursor, taken[k][0]))
            cursor = max(cursor, taken[k][1])
            k += 1
        if cursor < end:
            left.append((cursor, end))
    return left


def intersect(first: list[Interval], second: list[Interval]) -> list[Interval]:
    """The parts in both."""
    both: list[Interval] = []
    i = j = 0
    while i < len(first) and j < len(second):
        start = max(first[i][0], second[j][0])
        end = min(first[i][1], second[j][1])
        if start < end:
            both.append((start, end))
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return both


def length(intervals: list[Interval]) -> int:
    """The total length of a set, in its unit (ns)."""
    return sum(end - start for start, end in intervals)
