"""Sum each node's figures into its (operator, input shapes) group, in one process or two
(pure Python: no torch, no textual).

The last pass of :func:`~torchscan_tui.analysis.aggregate.aggregate_events`: by then every
node's self time, self bytes, device time and caller are known, and a group is a sum over
its nodes, so the nodes can be summed in two halves and the halves' groups added up. From
:data:`SPLIT_FROM` nodes, when asked to, the later half is summed in a forked child
(:mod:`~torchscan_tui.common.forked`) while this process sums the first: the other core
is idle by then (the summaries' child is done), and this pass is a third of a 1M-event
trace's grouping. The groups are the same either way, in the same order: the first
half's in order of first appearance, then the later half's new ones in theirs.
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import compress
from typing import overload

from torchscan_tui.analysis.activities import RUNTIME
from torchscan_tui.analysis.profiler_events import MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME
from torchscan_tui.analysis.records import RowKind
from torchscan_tui.common.forked import Forked, can_fork, patience

KIND_OPERATOR: RowKind = "operator"
KIND_RUNTIME: RowKind = "runtime"
KIND_ANNOTATION: RowKind = "annotation"
KIND_MEMORY: RowKind = "memory"
KIND_UNATTRIBUTED: RowKind = "unattributed"

# Below this many nodes a child's fork and pickled groups cost more than half the pass.
SPLIT_FROM = 200_000
# A group sent back from the child costs ~10 us (pickled, unpickled, its pages copied),
# where a node summed here costs ~1 us: a later half with more than one group for this
# many nodes (shapes that change at every call, say) is summed here instead, in line.
NODES_PER_GROUP_SENT = 20

# A group's key: its name, whether it is a user annotation, and its shapes (as the trace's
# JSON bytes, or the list's text).
GroupKey = tuple[str, bool, object]


@dataclass
class Group:
    """One (operator, input shapes) row being accumulated."""

    operator: str
    input_shapes: list
    kind: RowKind
    calls: int = 0
    cpu_self_ns: int = 0
    device_self_ns: int = 0
    cpu_net_bytes: int = 0
    callers: dict[str, int] = field(default_factory=dict)
    # Inclusive: the op's children counted too, as key_averages' cpu_time_total and
    # device_time_total; FLOPs as torch counts them (None: it counted none).
    cpu_total_ns: int = 0
    device_total_ns: int = 0
    flops: int | None = None
    sites: dict[str, int] = field(default_factory=dict)  # CPU self ns by call site


# The summed figures: the Group attribute and the NodeFigures field it sums.
SUMMED = (
    ("cpu_self_ns", "self_ns"),
    ("cpu_net_bytes", "self_bytes"),
    ("device_self_ns", "device_ns"),
    ("cpu_total_ns", "durations"),
    ("device_total_ns", "device_total_ns"),
    ("flops", "flops"),
)


@dataclass(frozen=True)
class NodeFigures:
    """What each node brings to its group: parallel sequences indexed by node."""

    names: Sequence[str]
    annotations: Sequence[bool]
    shapes: Sequence
    links: Sequence[int]  # linked correlation id, 0 for none
    classes: Sequence[str]  # activity class (analysis/activities.py)
    timed: Sequence[bool]  # a synchronous CPU node: its times and bytes count
    self_ns: Sequence[int]
    self_bytes: Sequence[int]
    device_ns: Sequence[int]
    durations: Sequence[int]
    device_total_ns: Sequence[int]
    flops: Sequence[int]  # empty: no FLOPs recorded
    sites: Sequence[str | None]  # empty: no call stacks
    callers: Sequence[str | None]  # the nearest enclosing user annotation


def row_kind(name: str, annotation: bool, linked_id: int, activity_cls: str) -> RowKind:
    """What a group's row is, from its first node."""
    if name == MEMORY_EVENT_NAME or name == OUT_OF_MEMORY_EVENT_NAME:
        return KIND_MEMORY
    if annotation:
        return KIND_ANNOTATION
    if linked_id > 0 or activity_cls == RUNTIME:
        return KIND_RUNTIME
    return KIND_OPERATOR


def group_nodes(figures: NodeFigures, indices: Sequence[int], split: bool = False) -> list[Group]:
    """The groups of the nodes in ``indices`` (in order of first appearance).

    ``split``: from :data:`SPLIT_FROM` nodes, where a child can run beside this process,
    the later half is summed in a forked child (see the module); a child that fails is
    made up for here, with the same groups."""
    if not split or len(indices) < SPLIT_FROM or not can_fork():
        return list(_keyed_groups(figures, indices).values())
    half = len(indices) // 2
    later_indices = indices[half:]
    most = len(later_indices) // NODES_PER_GROUP_SENT
    started = time.monotonic()
    with Forked(partial(_keyed_groups, figures, later_indices, most)) as later:
        first = _keyed_groups(figures, indices[:half])
        rest = later.result(timeout=patience(time.monotonic() - started))
    if rest is None:  # too many groups to be worth sending: summed here
        rest = _keyed_groups(figures, later_indices)
    return list(merged(first, rest).values())


def merged(first: dict[GroupKey, Group], later: dict[GroupKey, Group]) -> dict[GroupKey, Group]:
    """``first`` with ``later``'s groups added in: the sums of both halves' nodes, as the
    groups of the nodes of ``first`` then ``later`` (the halves in that order) would be."""
    for key, group in later.items():
        into = first.get(key)
        if into is None:
            first[key] = group
            continue
        into.calls += group.calls
        for attribute, _ in SUMMED:
            mine, theirs = getattr(into, attribute), getattr(group, attribute)
            if mine is None or theirs is None:  # FLOPs: None where a half counted none
                setattr(into, attribute, theirs if mine is None else mine)
            else:
                setattr(into, attribute, mine + theirs)
        for caller, calls in group.callers.items():
            into.callers[caller] = into.callers.get(caller, 0) + calls
        for site, ns in group.sites.items():
            into.sites[site] = into.sites.get(site, 0) + ns
    return first


@overload
def _keyed_groups(figures: NodeFigures, indices: Sequence[int]) -> dict[GroupKey, Group]: ...
@overload
def _keyed_groups(
    figures: NodeFigures, indices: Sequence[int], most: int
) -> dict[GroupKey, Group] | None: ...
def _keyed_groups(
    figures: NodeFigures, indices: Sequence[int], most: int | None = None
) -> dict[GroupKey, Group] | None:
    """The groups of the nodes in ``indices``, by key, in order of first appearance;
    None where there are more than ``most`` (found before any total is summed).

    Each node gets a group number first, then every total is a pass over those numbers.
    """
    names, annotations, shapes = figures.names, figures.annotations, figures.shapes
    keys = zip(
        map(names.__getitem__, indices),
        map(annotations.__getitem__, indices),
        [
            shape if type(shape) is bytes else str(shape)
            for shape in map(shapes.__getitem__, indices)
        ],
        strict=True,
    )
    numbers: dict[GroupKey, int] = {}
    ids = [numbers.setdefault(key, len(numbers)) for key in keys]
    if most is not None and len(numbers) > most:
        return None
    first_index = dict(zip(reversed(ids), reversed(indices), strict=True))
    groups = []
    for (name, annotation, _), number in numbers.items():
        index = first_index[number]
        kind = row_kind(name, annotation, figures.links[index], figures.classes[index])
        groups.append(Group(name, shapes[index], kind))
    for number, calls in Counter(ids).items():
        groups[number].calls = calls

    timed = array("q", compress(indices, map(figures.timed.__getitem__, indices)))
    timed_ids = list(compress(ids, map(figures.timed.__getitem__, indices)))
    for attribute, source in SUMMED:
        values = getattr(figures, source)
        if not values:  # no FLOPs recorded: None on every group, not a made-up 0
            continue
        totals = [0] * len(groups)
        if any(values):  # a CPU profile has no kernel time: no Python pass for zeros
            for number, value in zip(timed_ids, map(values.__getitem__, timed), strict=True):
                totals[number] += value
        for group, total in zip(groups, totals, strict=True):
            setattr(group, attribute, total if total or attribute != "flops" else None)

    if figures.sites:  # each call site's share of its group's self time
        sites_of, self_ns = figures.sites, figures.self_ns
        for number, site, ns in zip(timed_ids, map(sites_of.__getitem__, timed),
                                    map(self_ns.__getitem__, timed), strict=True):  # fmt: skip
            if site is not None:
                sites = groups[number].sites
                sites[site] = sites.get(site, 0) + ns

    pairs = Counter(zip(ids, map(figures.callers.__getitem__, indices), strict=True))
    for (number, caller), calls in pairs.items():
        if caller is not None:
            groups[number].callers[caller] = calls
    return dict(zip(numbers, groups, strict=True))
