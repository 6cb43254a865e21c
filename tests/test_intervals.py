"""Interval sets (analysis/intervals.py): the union of a million spans is taken from two
columns (issue 31), and gives what the union of the same spans as tuples gives."""

from __future__ import annotations

import random
from array import array

from torchscan_tui.analysis.intervals import intersect, minus, union, union_of


def test_union_merges_overlapping_and_touching_spans_and_keeps_gaps():
    assert union([(5, 7), (0, 2), (2, 3), (6, 9), (11, 12), (1, 2)]) == [(0, 3), (5, 9), (11, 12)]


def test_the_union_of_two_columns_is_the_union_of_their_pairs():
    draw = random.Random(31)
    for _ in range(200):
        count = draw.randrange(0, 60)
        starts = [draw.randrange(0, 100) for _ in range(count)]
        ends = [start + draw.randrange(0, 15) for start in starts]
        expected = union(zip(starts, ends, strict=True))
        assert union_of(array("q", starts), array("q", ends)) == expected
        assert union_of(starts, ends) == expected


def _covered(intervals) -> set[int]:
    return {t for start, end in intervals for t in range(start, end)}


def test_minus_and_intersect_are_the_set_difference_and_intersection():
    draw = random.Random(7)
    for _ in range(300):
        spans = [
            union(
                (s, s + draw.randrange(0, 9)) for s in draw.sample(range(80), draw.randrange(0, 12))
            )
            for _ in range(2)
        ]
        kept, taken = spans
        assert _covered(minus(kept, taken)) == _covered(kept) - _covered(taken)
        assert _covered(intersect(kept, taken)) == _covered(kept) & _covered(taken)
        for result in (minus(kept, taken), intersect(kept, taken)):
            assert all(start < end for start, end in result)
            assert result == sorted(result)
