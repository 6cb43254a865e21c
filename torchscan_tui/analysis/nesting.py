"""Nest a profile's CPU events by thread and interval, and fold the duplicate nodes
torch folds (pure Python: no torch, no textual).

Part of :mod:`~torchscan_tui.analysis.aggregate`'s grouping, split out so that each pass
over a million events lives in a module of its own. Both passes keep, beside each node's
parent, the durations and CPU bytes of its children: the self time and self memory
:func:`~torchscan_tui.analysis.aggregate.aggregate_events` takes off each node. They are
summed as the parents are found, not in a pass of their own over every node afterwards
(a 1M-event trace: ~0.3 s less), and a fold moves them with the children it lifts.
"""

from __future__ import annotations

from array import array
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import eq


@dataclass
class Nesting:
    """Each node's parent (-1: none), and the summed durations (ns) and CPU bytes of its
    children: what a node holds apart from what its children hold."""

    parent: MutableSequence[int]
    children_ns: MutableSequence[int]
    children_bytes: list[int]


def nest(
    nested: Sequence[int],
    threads: list[int],
    starts: Sequence[int],
    ends: Sequence[int],
    held: Sequence[int],
) -> Nesting:
    """Each event's parent: the innermost event on its thread holding it; ``held`` is
    each node's CPU bytes.

    ``nested`` lists the synchronous CPU events by thread, then by (start, -end), so a
    parent always comes before its children.
    """
    count = len(threads)
    parent = array("q", [-1]) * count
    children_ns = array("q", bytes(8 * count))
    children_bytes = [0] * count
    stack: list[int] = []
    current_thread = None
    for index, thread, start, end in zip(
        nested,
        map(threads.__getitem__, nested),
        map(starts.__getitem__, nested),
        map(ends.__getitem__, nested),
        strict=True,
    ):
        if thread != current_thread:
            current_thread, stack = thread, []
        while stack:
            top = stack[-1]
            top_end = ends[top]
            if start >= top_end or end > top_end:
                stack.pop()
            else:
                parent[index] = top
                children_ns[top] += end - start
                children_bytes[top] += held[index]
                break
        stack.append(index)
    return Nesting(parent, children_ns, children_bytes)


def fold_duplicate_nodes(
    order: Sequence[int],
    nested: Sequence[int],
    names: list[str],
    nesting: Nesting,
    durations: Sequence[int],
    held: Sequence[int],
    device_ns: list[int],
) -> list[bool]:
    """torch's ``_remove_dup_nodes``: fold an only child that repeats its parent's name.

    The fold lifts the child's children and kernels into the parent, and repeats until
    nothing changes. Returns which nodes survive. Each node's children's totals stay
    those of the children it has now: a fold puts the folded child's children's in place
    of the child's own.

    Only a node named as its parent can fold, and a fold keeps that true of exactly the
    nodes it was true of (the folded child's children move to a parent of the same
    name), so the passes visit those nodes alone, in ``order`` as torch does.
    """
    parent, children_ns, children_bytes = (
        nesting.parent,
        nesting.children_ns,
        nesting.children_bytes,
    )
    alive = [True] * len(parent)
    # The name comparison runs in C; only the same-name pairs reach Python.
    same_name = set(compress(range(len(parent)), map(eq, names, map(names.__getitem__, parent))))
    candidates = [index for index in order if index in same_name and parent[index] >= 0]
    if not candidates:
        return alive
    involved = set(candidates).union(map(parent.__getitem__, candidates))
    children: dict[int, list[int]] = {index: [] for index in involved}
    for index in compress(nested, map(involved.__contains__, map(parent.__getitem__, nested))):
        children[parent[index]].append(index)
    while True:
        removed = False
        for index in candidates:
            if not alive[index]:
                continue
            up = parent[index]
            if len(children[up]) == 1:
                children[up] = children[index]
                device_ns[up] = device_ns[index]
                children_ns[up] += children_ns[index] - durations[index]
                children_bytes[up] += children_bytes[index] - held[index]
                for kid in children[index]:
                    parent[kid] = up
                alive[index] = False
                removed = True
        if not removed:
            return alive
