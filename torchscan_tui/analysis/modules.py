"""The ``nn.Module`` tree: each module's CPU and device time, calls and operators (pure).

As the TensorBoard plugin's Module view, from the module ranges a profile holds: a live
run's traced step (``worker/call_sites.py`` opens a :data:`MODULE_MARK` range around each
module's forward) or a trace recorded with ``with_stack`` (Kineto's ``nn.Module: Linear_0``
``python_function`` events). A module's path is the chain of module ranges around it.

Each operator's self time counts on the innermost module around it; a backward op's on
the module whose forward op it differentiates (autograd's sequence number, as call
sites do: :func:`~torchscan_tui.analysis.sites.nested_sites`). So a module's time is its
forward's ops and the backward autograd ran for them. A row's share of each module is
its group's share in the ranged step, applied to the row's own self time (CPU, and
device time by the same share). A module's total is its own plus its children's; the
root is the step: every row's self time, the part in no module (the loss, the optimizer)
its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from torchscan_tui.analysis.records import ModuleNode, ModulesBlock, Row
from torchscan_tui.analysis.sites import SiteTable

MODULE_MARK = "[torchscan module] "  # a live run's range around one module's forward
KINETO_MODULE = "nn.Module: "  # Kineto's python_function event for one
SOURCE_SEPARATOR = " @ "  # a live module's range: "qkv: Linear @ /…/model.py(12): forward"
ROOT = "(step)"
MODULES_FROM_STEP = (
    "the step after the window, each module's forward ranged (the times are the window's)"
)
MODULES_FROM_TRACE = "the trace's nn.Module python_function events (with_stack)"
MAX_OPERATORS = 10  # a module lists its ten largest operators


def module_label(name: str) -> str | None:
    """The module a range names (``qkv: Linear @ …`` or ``Linear_0``), else None."""
    if name.startswith(MODULE_MARK):
        return name[len(MODULE_MARK) :]
    if name.startswith(KINETO_MODULE):
        return name[len(KINETO_MODULE) :]
    return None


def module_paths(
    labels: Sequence[str | None],
    threads: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
) -> list[str | None]:
    """Each module range's path (its name after those of the module ranges around it,
    ``/``-joined; a live label's source left out); None for every other event."""
    order = sorted(
        (i for i, label in enumerate(labels) if label is not None),
        key=lambda i: (threads[i], starts[i], -ends[i]),
    )
    paths: list[str | None] = [None] * len(labels)
    open_ranges: list[tuple[int, str]] = []  # (end, path), innermost last
    thread = None
    for index in order:
        if threads[index] != thread:
            open_ranges.clear()
            thread = threads[index]
        while open_ranges and open_ranges[-1][0] < ends[index]:
            open_ranges.pop()
        label = labels[index]
        assert label is not None
        name = _split(label)[0]
        path = f"{open_ranges[-1][1]}/{name}" if open_ranges else name
        paths[index] = path
        open_ranges.append((ends[index], path))
    return paths


def _split(label: str) -> tuple[str, str | None]:
    """``(name, source)`` of a label: a live module's carries its class's source line."""
    name, _, source = label.partition(SOURCE_SEPARATOR)
    return name, source or None


def module_sources(labels: Sequence[str | None], paths: Sequence[str | None]) -> dict[str, str]:
    """Each module path's source line, where its label says (a live run's)."""
    sources = {}
    for label, path in zip(labels, paths, strict=True):
        if label is not None and path is not None:
            where = _split(label)[1]
            if where is not None:
                sources[path] = where
    return sources


def module_calls(paths: Iterable[str | None]) -> dict[str, int]:
    """Each module path's forward calls: its ranges."""
    calls: dict[str, int] = {}
    for path in paths:
        if path is not None:
            calls[path] = calls.get(path, 0) + 1
    return calls


def module_tree(
    rows: Iterable[Row],
    table: SiteTable,
    calls: Mapping[str, int],
    source: str,
    sources: Mapping[str, str] | None = None,
) -> ModulesBlock | None:
    """The tree, depth first, children by total CPU time; None without module ranges.

    ``table``: (operator, shapes) -> (CPU self ns by module path, the group's self ns)
    in the ranged step; ``calls``: each path's forward calls there."""
    if not calls:
        return None
    own_cpu: dict[str, float] = {}
    own_device: dict[str, float] = {}
    operators: dict[str, dict[str, float]] = {}
    step_cpu = step_device = 0.0
    device_measured = False
    for row in rows:
        cpu = row.get("cpu_self_seconds") or 0.0
        device = row.get("device_self_seconds")
        step_cpu += cpu
        if device is not None:
            device_measured = True
            step_device += device
        found = table.get((row["operator"], str(row["input_shapes"])))
        if found is None or found[1] <= 0:
            continue
        by_path, group_ns = found
        for path, ns in by_path.items():
            share = ns / group_ns
            own_cpu[path] = own_cpu.get(path, 0.0) + cpu * share
            own_device[path] = own_device.get(path, 0.0) + (device or 0.0) * share
            ops = operators.setdefault(path, {})
            ops[row["operator"]] = ops.get(row["operator"], 0.0) + cpu * share
    paths = set(calls) | set(own_cpu)
    for path in list(paths):  # every ancestor is a node, whether it ran ops itself or not
        parts = path.split("/")
        paths.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    total_cpu = dict.fromkeys(paths, 0.0)
    total_device = dict.fromkeys(paths, 0.0)
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            ancestor = "/".join(parts[:depth])
            total_cpu[ancestor] += own_cpu.get(path, 0.0)
            total_device[ancestor] += own_device.get(path, 0.0)
    in_modules = sum(own_cpu.values())
    children: dict[str, list[str]] = {}
    for path in paths:
        parent = path.rpartition("/")[0] or ROOT
        children.setdefault(parent, []).append(path)
    nodes: list[ModuleNode] = [
        {
            "path": ROOT,
            "name": ROOT,
            "source": None,
            "depth": 0,
            "calls": None,
            "cpu_self_seconds": max(step_cpu - in_modules, 0.0),
            "cpu_total_seconds": step_cpu,
            "device_self_seconds": max(step_device - sum(own_device.values()), 0.0)
            if device_measured
            else None,
            "device_total_seconds": step_device if device_measured else None,
            "operators": {},
        }
    ]

    def visit(parent: str, depth: int) -> None:
        for path in sorted(children.get(parent, []), key=lambda p: (-total_cpu[p], p)):
            name = path.rsplit("/", 1)[-1]
            ops = sorted(operators.get(path, {}).items(), key=lambda item: -item[1])
            nodes.append(
                {
                    "path": path,
                    "name": name,
                    "source": (sources or {}).get(path),
                    "depth": depth,
                    "calls": calls.get(path),
                    "cpu_self_seconds": own_cpu.get(path, 0.0),
                    "cpu_total_seconds": total_cpu[path],
                    "device_self_seconds": own_device.get(path, 0.0) if device_measured else None,
                    "device_total_seconds": total_device[path] if device_measured else None,
                    "operators": dict(ops[:MAX_OPERATORS]),
                }
            )
            visit(path, depth + 1)

    visit(ROOT, 1)
    return {"source": source, "nodes": nodes}
