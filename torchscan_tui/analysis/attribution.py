"""Device time to the operator that launched it: the one rule, for traces and live runs.

The rule, as the profiler itself links events:

1. A kernel, memcpy or memset carries the ``correlation`` id of the runtime call that
   launched it (``cudaLaunchKernel``, ``hipMemcpyAsync``, ...): that call is its launcher.
2. The runtime call belongs to the innermost CPU event that encloses it on its thread
   (an ``aten::`` op, or a ``record_function`` range when no op is open): that event gets
   the device time as device *self* time.
3. ``External id`` (``linked_correlation_id`` live) is used only where it agrees: to move
   a runtime call onto the thread of the op it names when that op encloses it in time and
   the call's own thread has no ops (the live profile numbers torch's threads and the
   OS's differently), and for device work with no runtime call in the profile, when the id
   is not just a copy of the correlation (some traces write ``External id == correlation``,
   which then collides with unrelated ops' ids).
4. Device work that reaches no operator is not dropped and not shown as zero: it lands on
   one of two ``unattributed`` rows, named for the reason, and a diagnostic says how much.

GPU-side annotations (``gpu_user_annotation``) and waits (``cuda_sync``) are not device
work and are never added to an op's device time.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field

from torchscan_tui.analysis.activities import RUNTIME, transfer_direction

NO_LAUNCH = "[device work with no launching call]"
OUTSIDE_OPS = "[device work launched outside any operator]"
UNATTRIBUTED_REASONS = {
    NO_LAUNCH: "no runtime call in the profile carries its correlation id, and it names no "
    "operator of its own (the trace may be cut, or its runtime events were not recorded)",
    OUTSIDE_OPS: "its runtime call ran outside any operator or record_function range",
}


@dataclass
class Attribution:
    """Where each piece of device work went.

    ``work`` lists the node indices of device work; ``launchers`` the node each went to
    (-1 where none), ``unattributed`` its row name there. ``op_device_ns`` is indexed by
    node: the device time each op launched itself.
    """

    work: Sequence[int]
    launchers: MutableSequence[int]
    unattributed: list[str | None]
    op_device_ns: list[int]
    unattributed_ns: dict[str, int] = field(default_factory=dict)
    unattributed_calls: dict[str, int] = field(default_factory=dict)


def place_runtime_calls(
    runtime_calls: Sequence[int],
    op_ids: dict[int, int],
    op_threads: set[int],
    links: Sequence[int],
    threads: list[int],
    starts: Sequence[int],
    ends: Sequence[int],
) -> None:
    """Move each runtime call on a thread without ops to its op's thread (rule 3).

    ``op_ids`` maps an op's correlation id to its node. In a trace, runtime calls and ops
    share thread ids and nothing moves; live, torch's op threads are numbered apart from
    the OS thread ids of runtime calls, and ``linked_correlation_id`` bridges them.
    """
    for index in runtime_calls:
        if threads[index] in op_threads:
            continue
        op = op_ids.get(links[index])
        if op is not None and starts[op] <= starts[index] and ends[index] <= ends[op]:
            threads[index] = threads[op]


def attribute_device_work(
    work: Sequence[int],
    runtime_calls: Sequence[int],
    correlation_ids: Sequence[int],
    links: Sequence[int],
    op_ids: dict[int, int],
    parent: Sequence[int],
    durations: Sequence[int],
    classes: list[str],
) -> Attribution:
    """Rules 1, 2 and 4 (and 3's fallback): each device event's op, once nesting is known.

    ``parent`` is the nesting of CPU events (the runtime calls among them), ``durations``
    every node's length in ns, ``classes`` every node's activity class: a runtime call
    inside another (MTIA nests them) belongs to the op around both.
    """
    launch_of = {correlation_ids[i]: i for i in runtime_calls if correlation_ids[i]}
    op_device_ns = [0] * len(parent)
    result = Attribution(work, array("q"), [], op_device_ns)  # 8 bytes a launch
    for index in work:
        runtime = launch_of.get(correlation_ids[index])
        if runtime is not None:
            op = parent[runtime]
            while op >= 0 and classes[op] == RUNTIME:
                op = parent[op]
            reason = None if op >= 0 else OUTSIDE_OPS
        else:
            link = links[index]
            usable = link > 0 and link != correlation_ids[index]
            op = op_ids.get(link, -1) if usable else -1
            reason = None if op >= 0 else NO_LAUNCH
        result.launchers.append(op)
        result.unattributed.append(reason)
        if reason is None:
            op_device_ns[op] += durations[index]
        else:
            result.unattributed_ns[reason] = (
                result.unattributed_ns.get(reason, 0) + durations[index]
            )
            result.unattributed_calls[reason] = result.unattributed_calls.get(reason, 0) + 1
    return result


@dataclass
class KernelGroup:
    """One row of the kernel view: device events of one name launched by one operator."""

    name: str
    operator: str
    activity: str
    direction: str | None
    calls: int = 0
    total_ns: int = 0
    min_ns: int = 0
    max_ns: int = 0


def kernel_groups(
    attribution: Attribution, names: list[str], activities: list[str], durations: Sequence[int]
) -> list[KernelGroup]:
    """The kernel view: device work grouped by (kernel name, launching operator).

    Memcpy and memset keep their direction (HtoD, DtoH, DtoD, ...) from their name, so the
    copies are told apart as the TensorBoard plugin's kernel view did.
    """
    groups: dict[tuple[str, str], KernelGroup] = {}
    by_key: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for index, op, reason in zip(
        attribution.work, attribution.launchers, attribution.unattributed, strict=True
    ):
        key = (names[index], reason if reason is not None else names[op])
        if key not in groups:
            groups[key] = KernelGroup(key[0], key[1], activities[index], transfer_direction(key[0]))
        by_key[key].append(durations[index])
    for key, times in by_key.items():
        group = groups[key]
        group.calls, group.total_ns = len(times), sum(times)
        group.min_ns, group.max_ns = min(times), max(times)
    return sorted(groups.values(), key=lambda group: (-group.total_ns, group.name, group.operator))
