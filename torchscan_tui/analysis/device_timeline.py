"""The device timeline's temporal breakdown, as HolisticTraceAnalysis defines it (pure).

HTA (``get_temporal_breakdown``, ``get_comm_comp_overlap``, version 0.5.0) looks at the
device's events (kernels, memcpy, memset, and the synchronisations drawn on a stream)
over the span from the first one's start to the last one's end:

* **idle**: the span's time with no device event running;
* **compute**: the time a compute kernel runs: a device event that HTA's name patterns
  do not call a collective (``^nccl.*Kernel``), a memory event (``^Memcpy``,
  ``^Memset``, ``^dma``) or another non-compute one (``.*Memcpy``, ``Memset``,
  ``.*Sync``); the patterns are kept as HTA has them, so ``Stream Wait Event`` counts as
  compute there and here;
* **non-compute**: the rest (span - compute - idle);
* **communication/computation overlap**: the share of the NCCL kernels' time
  (``^nccl.*Kernel``) during which a compute kernel also runs; None without NCCL kernels.

Which events: HTA drops the device work of a trace's last ``ProfilerStep`` (when a trace
has two or more), keeping what was launched by runtime calls that start before the last
step does. A live window's steps end with the device drained, so there every step's
device work is kept: what runtime calls inside the window launched.

HTA also finds stragglers from when each rank's main collective kernel starts within its
step (:func:`collective_starts`); :mod:`.ranks` compares them across ranks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from torchscan_tui.analysis.activities import DEVICE_WORK, RUNTIME
from torchscan_tui.analysis.intervals import Interval, intersect, length, union
from torchscan_tui.analysis.profiler_events import EventColumns
from torchscan_tui.analysis.records import CollectiveStarts, DeviceTimeline
from torchscan_tui.analysis.step_model import FROM_PROFILER_STEPS, FROM_WINDOW, Step, Steps

NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")  # HTA's
MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")  # HTA's MEMORY_KERNEL_RE
COMMUNICATION = re.compile(r"^nccl.*Kernel")  # HTA's NCCL_KERNEL_RE


def is_compute(name: str) -> bool:
    """HTA's ``get_kernel_type(name) == COMPUTATION``: no collective, copy, memset, DMA
    or sync (by HTA's patterns, kept as they are)."""
    return not (COMMUNICATION.match(name) or MEMORY.match(name) or NOT_COMPUTE.match(name))


LONG_COLLECTIVE = 0.01  # HTA's: a collective kernel of >= 1% of the mean step counts


def _device_events(columns: EventColumns, steps: Steps | None) -> list[tuple[str, int, int]]:
    """(name, start, end) of the device events HTA's breakdown reads (module docstring)."""
    classes = columns.classes
    found = [
        (columns.names[index], columns.starts[index], columns.ends[index], corr)
        for index, (cls, corr) in enumerate(zip(classes, columns.correlation_ids, strict=True))
        if cls == DEVICE_WORK
    ]
    found += [(w.name, w.start_ns, w.end_ns, w.correlation_id) for w in columns.device_waits]
    launch_window = _launch_window(steps)
    if launch_window is not None:
        low, high = launch_window
        launched = {
            corr
            for cls, corr, start in zip(
                classes, columns.correlation_ids, columns.starts, strict=True
            )
            if cls == RUNTIME and corr and low <= start < high
        }
        found = [event for event in found if event[3] in launched]
    return [(name, start, end) for name, start, end, _ in found]


def _launch_window(steps: Steps | None) -> tuple[float, float] | None:
    """The host range whose runtime calls' device work counts; None for all of it."""
    if steps is None or not steps.host:
        return None
    if steps.source == FROM_WINDOW:
        return steps.host[0].start_ns, steps.host[-1].end_ns
    if steps.source == FROM_PROFILER_STEPS and len({step.name for step in steps.host}) >= 2:
        return float("-inf"), max(step.start_ns for step in steps.host)
    return None  # HTA filters only a trace of two or more steps


def temporal_breakdown(columns: EventColumns, steps: Steps | None = None) -> DeviceTimeline | None:
    """HTA's idle / compute / non-compute split of the device timeline, in seconds and
    shares of its span, and the communication/computation overlap; None without device
    events."""
    events = _device_events(columns, steps)
    busy = union((start, end) for _, start, end in events if end > start)
    if not busy:
        return None
    span = busy[-1][1] - busy[0][0]
    names = {name for name, _, _ in events}
    computing = {name for name in names if is_compute(name)}
    collective = {name for name in names if COMMUNICATION.match(name)}
    compute = union((s, e) for name, s, e in events if e > s and name in computing)
    communication = union((s, e) for name, s, e in events if e > s and name in collective)
    idle = span - length(busy)
    compute_ns = length(compute)
    overlap = (
        length(intersect(compute, communication)) / length(communication) if communication else None
    )
    return {
        "span_seconds": span / 1e9,
        "idle_seconds": idle / 1e9,
        "compute_seconds": compute_ns / 1e9,
        "non_compute_seconds": (span - compute_ns - idle) / 1e9,
        "idle_share": idle / span if span else None,
        "compute_share": compute_ns / span if span else None,
        "non_compute_share": (span - compute_ns - idle) / span if span else None,
        "communication_seconds": length(communication) / 1e9,
        "comm_comp_overlap": overlap,
    }


def collective_starts(columns: EventColumns, steps: Sequence[Step]) -> dict[str, CollectiveStarts]:
    """HTA's straggler evidence on one rank: for each long collective kernel (an NCCL
    kernel of at least 1% of the mean step), in each step, when its last run starts
    within the step and how long it runs, both as shares of the step's length.

    ``{kernel name: {"starts": [share per step], "durations": [share per step]}}``; a
    step where it did not run holds None.
    """
    if not steps:
        return {}
    mean_step = sum(step.end_ns - step.start_ns for step in steps) / len(steps)
    shortest = mean_step * LONG_COLLECTIVE
    classes = columns.classes
    collective = {name for name in set(columns.names) if COMMUNICATION.match(name)}
    found: dict[str, CollectiveStarts] = {}
    for index, name in enumerate(columns.names):
        if name not in collective or classes[index] != DEVICE_WORK:
            continue
        start, end = columns.starts[index], columns.ends[index]
        if end - start < shortest:
            continue
        for position, step in enumerate(steps):
            if step.start_ns <= start < step.end_ns:
                length_ns = step.end_ns - step.start_ns
                entry = found.setdefault(
                    name, {"starts": [None] * len(steps), "durations": [None] * len(steps)}
                )
                last = entry["starts"][position]
                offset = (start - step.start_ns) / length_ns
                if last is None or offset >= last:  # the last run in the step
                    entry["starts"][position] = offset
                    entry["durations"][position] = (end - start) / length_ns
                break
    return found


__all__ = ["Interval", "collective_starts", "temporal_breakdown"]
