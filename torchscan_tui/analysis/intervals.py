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
    million spans as two 8-byte arrays, not a million tuples: ~110 MiB less). Sorted by
    start alone: spans of one start merge into the same set in any order."""
    order = sorted(range(len(starts)), key=starts.__getitem__)
    return _merged(zip(map(starts.__getitem__, order), map(ends.__getitem__, order), strict=True))


def _merged(ordered: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    spans = iter(ordered)
    first = next(spans, None)
    if first is None:
        return merged
    low, high = first
    for start, end in spans:
        if start <= high:
            if end > high:
                high = end
        else:
            merged.append((low, high))
            low, high = start, end
    merged.append((low, high))
    return merged


# The passes below run over a million spans of a big trace: each keeps its lengths and
# bounds in locals and picks with conditional expressions, not len(), min() and max()
# calls per step (~2x faster).


def minus(kept: list[Interval], taken: list[Interval]) -> list[Interval]:
    """``kept`` without the parts in ``taken``."""
    left: list[Interval] = []
    append = left.append
    j, count = 0, len(taken)
    for start, end in kept:
        while j < count and taken[j][1] <= start:
            j += 1
        k, cursor = j, start
        while k < count:
            taken_start, taken_end = taken[k]
            if taken_start >= end:
                break
            if taken_start > cursor:
                append((cursor, taken_start))
            if taken_end > cursor:
                cursor = taken_end
            k += 1
        if cursor < end:
            append((cursor, end))
    return left


def intersect(first: list[Interval], second: list[Interval]) -> list[Interval]:
    """The parts in both."""
    both: list[Interval] = []
    append = both.append
    i = j = 0
    first_count, second_count = len(first), len(second)
    while i < first_count and j < second_count:
        first_start, first_end = first[i]
        second_start, second_end = second[j]
        start = first_start if first_start > second_start else second_start
        end = first_end if first_end < second_end else second_end
        if start < end:
            append((start, end))
        if first_end < second_end:
            i += 1
        else:
            j += 1
    return both


def length(intervals: list[Interval]) -> int:
    """The total length of a set, in its unit (ns)."""
    return sum(end - start for start, end in intervals)
