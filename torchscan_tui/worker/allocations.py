"""A live profile's allocations, from its event tree (torch side).

Kineto's flat events give a ``[memory]`` instant its size but not its pointer nor the
allocator's total (``extra_meta`` is empty); the profile's event tree
(``experimental_event_tree``, what torch's own memory profiler reads) has them, each
allocation under the op that made it. An allocation is put on the outermost ATen op above
it (``aten::ones``, not the ``aten::empty`` inside it): the op a user wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torchscan_tui.analysis.memory_timeline import Allocation

MAX_TREE_EVENTS = 2_000_000  # past this, the tree's walk in Python costs more than it tells


def _tensor_shapes(inputs: Any) -> list:
    """An op's input shapes as the rows hold them: a tensor's sizes, ``[]`` otherwise."""
    shapes = []
    for value in inputs or ():
        sizes = getattr(value, "sizes", None)
        shapes.append(list(sizes) if sizes is not None else [])
    return shapes


def _maker(event: Any) -> tuple[str | None, list]:
    """The outermost ATen op above an allocation, with its input shapes."""
    found, shapes = None, []
    parent = event.parent
    while parent is not None:
        name = parent.name
        if name.startswith("aten::"):
            found = name
            shapes = _tensor_shapes(getattr(parent.extra_fields, "inputs", None))
        parent = parent.parent
    if found is None and event.parent is not None:
        found = event.parent.name  # no ATen op above it: the range or op it is in
    return found, shapes


def _walk(roots: list) -> Iterator[Any]:
    stack = list(roots)
    while stack:
        event = stack.pop()
        yield event
        stack.extend(event.children)


def allocations_of(kineto_results: Any, start_ns: int, end_ns: int) -> list[Allocation] | None:
    """The allocations and frees between ``start_ns`` and ``end_ns``; None when the tree
    is too large to walk (:data:`MAX_TREE_EVENTS`) or this torch has none."""
    from torch._C._profiler import _EventType

    try:
        roots = kineto_results.experimental_event_tree()
    except (AttributeError, RuntimeError):
        return None
    found = []
    for count, event in enumerate(_walk(roots)):
        if count > MAX_TREE_EVENTS:
            return None
        if event.tag != _EventType.Allocation:
            continue
        time_ns = event.start_time_ns
        if not start_ns <= time_ns <= end_ns:
            continue
        fields = event.extra_fields
        operator, shapes = _maker(event)
        found.append(
            Allocation(time_ns, int(fields.ptr), int(fields.alloc_size),
                       int(fields.total_allocated), str(fields.device), operator, shapes)
        )  # fmt: skip
    return found
