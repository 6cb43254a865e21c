"""The step overview: where each step's time went, and what to try about it.

Computed as the TensorBoard profiler plugin's overview is (kineto ``tb_plugin``:
``StepParser._parse_step`` for the categories, ``OverallParser`` for the split), over the
steps of :mod:`.step_model`. Every moment of a step goes to the first of these that was
busy then, so nothing is counted twice and the parts add up to the step:

    device kernels > memcpy > memset > communication > runtime (launch calls) >
    DataLoader > CPU work > other (nothing profiled was running)

Communication is device work launched by a collective (an op named ``nccl:*`` or
``gloo:*``, or a kernel named ``nccl...Kernel``, as HTA names them) and the host time
of the collective ops themselves. The shares over the steps lead to recommendations,
each naming the rule and the figure that fired it (docs/overview-and-ranks.md). Pure:
event columns in, plain dicts out.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from torchscan_tui.analysis.activities import (
    CPU_OP,
    DEVICE_WORK,
    RUNTIME,
    transfer_direction,
)
from torchscan_tui.analysis.intervals import Interval, intersect, length, minus, union, union_of
from torchscan_tui.analysis.profiler_events import EventColumns
from torchscan_tui.analysis.records import Advice, Overview, OverviewStep
from torchscan_tui.analysis.step_model import (
    FROM_PROFILER_STEPS,
    FROM_WHOLE_PROFILE,
    FROM_WINDOW,
    MARKERS,
    PROFILER_STEP,
    Step,
    Steps,
)
from torchscan_tui.common.formatting import format_seconds

CATEGORIES = (
    "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu", "other",
)  # fmt: skip
LABELS = {
    "kernel": "device kernels",
    "memcpy": "memcpy",
    "memset": "memset",
    "communication": "communication",
    "runtime": "runtime (launches)",
    "dataloader": "DataLoader",
    "cpu": "CPU work",
    "other": "other",
}
# The plugin's: a DataLoader range is `enumerate(DataLoader)#...__next__` (or DataPipe's).
DATALOADER_PREFIX, DATALOADER_SUFFIX = "enumerate(DataLoader)#", ".__next__"
DATAPIPE_PREFIX = "enumerate(DataPipe)#"
COLLECTIVE_OP = re.compile(r"(nccl|gloo):")
COLLECTIVE_KERNEL = re.compile(r"nccl.*Kernel")  # HTA's NCCL_KERNEL_RE

# The plugin's thresholds (RunProfileData.analyze): over these the advice is given.
DATALOADER_SHARE = 0.05
COMMUNICATION_SHARE = 0.10
LOW_UTILIZATION = 0.5
# Ours (the plugin has no such rule; docs/overview-and-ranks.md says why each).
LAUNCH_BOUND_RUNTIME_SHARE = 0.30
TINY_KERNEL_S = 10e-6
HTOD_SHARE = 0.10
IDLE_SHARE = 0.10


def _is_dataloader(name: str) -> bool:
    return (
        name.startswith(DATALOADER_PREFIX) and name.endswith(DATALOADER_SUFFIX)
    ) or name.startswith(DATAPIPE_PREFIX)


def category_spans(columns: EventColumns) -> dict[str, tuple[array, array]]:
    """Each category's busy time over the whole profile, as spans (a column of starts
    and one of ends, not yet a set: :func:`~.intervals.union_of` makes one), and the
    host-to-device copies (``htod``) and every kernel, collectives' too (``any_kernel``),
    apart for the advice."""
    classes = columns.classes
    names, starts, ends = columns.names, columns.starts, columns.ends
    collective_names = {name for name in set(names) if COLLECTIVE_OP.match(name)}
    collective_ids = {
        columns.correlation_ids[index]
        for index, name in enumerate(names)
        if name in collective_names and classes[index] == CPU_OP
    } - {0}
    # Each category's spans as a column of starts and one of ends (analysis/intervals.py).
    spans: dict[str, tuple[array, array]] = {
        name: (array("q"), array("q")) for name in (*CATEGORIES[:-1], "htod", "any_kernel")
    }
    known: dict[tuple[str, str], str | None] = {}  # (name, class): its category
    devices, linked = columns.devices, columns.linked_ids
    for index, (name, cls) in enumerate(zip(names, classes, strict=True)):
        start, end = starts[index], ends[index]
        if end <= start:
            continue
        category = known.get((name, cls), "")
        if category == "":
            category = known[name, cls] = _category(name, cls)
        if category is None:
            continue
        if cls == DEVICE_WORK:
            if category == "kernel":
                _add_span(spans["any_kernel"], start, end)
                if linked[index] in collective_ids:
                    category = "communication"
            elif category == "communication":
                _add_span(spans["any_kernel"], start, end)
            elif category == "htod":
                _add_span(spans["htod"], start, end)
                category = "memcpy"
        elif category == "cpu" and devices[index] != "CPU":
            continue
        _add_span(spans[category], start, end)
    return spans


def _add_span(span: tuple[array, array], start: int, end: int) -> None:
    """``(start, end)`` added to a category's spans, or merged into the last one added
    when it starts within it: the union is the same, and a thread's nested operators
    (written parent first) take one span, not one each (a 1M-event trace's 380k CPU
    spans are 42k: the pass a fifth faster, its peak ~20 MiB lower)."""
    starts, ends = span
    if starts and starts[-1] <= start <= ends[-1]:
        if end > ends[-1]:
            ends[-1] = end
        return
    starts.append(start)
    ends.append(end)


def _category(name: str, cls: str) -> str | None:
    """An event's category by its name and class alone (``htod`` for a host-to-device
    copy, a memcpy); None for what is no work of a step's (the steps themselves, device
    annotations and waits)."""
    if cls == DEVICE_WORK:
        direction = transfer_direction(name)
        if direction == "memset":
            return "memset"
        if direction:
            return "htod" if direction == "HtoD" else "memcpy"
        return "communication" if COLLECTIVE_KERNEL.match(name) else "kernel"
    if cls == RUNTIME:
        return "runtime"
    if cls == CPU_OP:
        if name in MARKERS or name.startswith(PROFILER_STEP):
            return None
        if _is_dataloader(name):
            return "dataloader"
        return "communication" if COLLECTIVE_OP.match(name) else "cpu"
    return None


def _within_each(intervals: list[Interval], steps: list[Step]) -> list[int]:
    """How much of ``intervals`` (a set) lies in each step (disjoint, in order), in ns."""
    totals = [0] * len(steps)
    first, count = 0, len(intervals)
    for position, step in enumerate(steps):
        step_start, step_end = step.start_ns, step.end_ns
        while first < count and intervals[first][1] <= step_start:
            first += 1
        index, total = first, 0
        while index < count:
            start, end = intervals[index]
            if start >= step_end:
                break
            total += (end if end < step_end else step_end) - (
                start if start > step_start else step_start
            )
            index += 1
        totals[position] = total
    return totals


@dataclass(frozen=True)
class StepSplit:
    """The overview as the event columns alone give it (no recommendations yet), and
    the figures its recommendations read beside the shares; made apart from the rows
    (:func:`step_split`), so it can be computed while they are grouped."""

    overview: Overview
    figures: dict[str, Any]


def step_overview(
    columns: EventColumns,
    steps: Steps,
    kernels: Sequence[Mapping[str, Any]] = (),
    rows: Sequence[Mapping[str, Any]] = (),
) -> Overview | None:
    """Every step's split, the shares over all steps and the recommendations; None
    when the profile has no step. ``kernels`` (the kernel view) and ``rows`` (the
    operator rows) are the figures some recommendations cite."""
    split = step_split(columns, steps)
    return None if split is None else advised(split, kernels, rows)


def advised(
    split: StepSplit, kernels: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> Overview:
    """The overview of ``split`` with its recommendations, which cite the kernel view
    and the operator rows."""
    overview = split.overview.copy()  # the split stays as computed
    overview["recommendations"] = recommendations(overview["shares"], split.figures, kernels, rows)
    return overview


def step_split(columns: EventColumns, steps: Steps) -> StepSplit | None:
    """Every step's split and the shares over all steps, from the event columns alone;
    None when the profile has no step."""
    if not steps.steps:
        return None
    spans = category_spans(columns)
    device_work = any(spans[name][0] for name in ("kernel", "memcpy", "memset", "any_kernel"))
    in_steps = union((step.start_ns, step.end_ns) for step in steps.steps)
    free = in_steps
    per_category: dict[str, list[int]] = {}
    for name in CATEGORIES[:-1]:  # each category's set made as it is used, then let go
        own = intersect(free, union_of(*spans.pop(name)))
        per_category[name] = _within_each(own, steps.steps)
        free = minus(free, own)
    per_category["other"] = _within_each(free, steps.steps)
    per_step = [
        cast(OverviewStep, {
            "name": step.name,
            "seconds": step.seconds,
            **{name: per_category[name][index] / 1e9 for name in CATEGORIES},
        })
        for index, step in enumerate(steps.steps)
    ]  # fmt: skip
    total = sum(step.end_ns - step.start_ns for step in steps.steps)
    shares = {name: (sum(per_category[name]) / total if total else None) for name in CATEGORIES}
    span = [(steps.steps[0].start_ns, steps.steps[-1].end_ns)]
    any_kernel, htod = union_of(*spans["any_kernel"]), union_of(*spans["htod"])
    figures: dict[str, Any] = {
        # The plugin's GPU utilization: kernels' busy time over the steps' whole span.
        "utilization": length(intersect(any_kernel, span)) / (span[0][1] - span[0][0])
        if any_kernel and span[0][1] > span[0][0]
        else None,
        "htod_share": length(intersect(htod, in_steps)) / total if total else None,
        "device_work": device_work,
    }
    overview: Overview = {
        "categories": [{"name": name, "label": LABELS[name]} for name in CATEGORIES],
        "steps": per_step,
        "shares": shares,
        "source": steps.source,
        "dropped_steps": steps.dropped,
        "device_utilization": figures["utilization"],
    }
    return StepSplit(overview, figures)


def recommendations(
    shares: dict[str, float | None],
    figures: Mapping[str, Any],
    kernels: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
) -> list[Advice]:
    """Plain advice from the shares, each with its rule's code and the figure behind it
    (``because``); the rules and thresholds are in docs/overview-and-ranks.md."""
    advice: list[Advice] = []
    if not any(shares.values()):
        return advice

    def add(code: str, text: str, because: str) -> None:
        advice.append({"code": code, "text": text, "because": because})

    dataloader = shares.get("dataloader") or 0.0
    if dataloader > DATALOADER_SHARE:
        add(
            "input_bound",
            "The steps wait on the DataLoader: raise num_workers, set pin_memory=True, or "
            "make each sample cheaper to load.",
            f"DataLoader is {dataloader:.1%} of step time (over {DATALOADER_SHARE:.0%}).",
        )
    communication = shares.get("communication") or 0.0
    if communication > COMMUNICATION_SHARE:
        add(
            "communication_bound",
            "Much of each step is communication: overlap it with compute (DDP's bucketing, "
            "gradient accumulation with no_sync), or compress gradients (DDP comm hooks).",
            f"communication is {communication:.1%} of step time (over {COMMUNICATION_SHARE:.0%}).",
        )
    utilization = figures.get("utilization")
    if utilization is not None and utilization < LOW_UTILIZATION:
        add(
            "low_device_utilization",
            "The device runs kernels for less than half of the steps' time: a larger batch "
            "gives it more work per launch (mind convergence), and the host work between "
            "launches is the other place to look.",
            f"kernels ran {utilization:.1%} of the steps' span (under {LOW_UTILIZATION:.0%}).",
        )
    device_kernels = [k for k in kernels if not k.get("direction")]
    runtime = shares.get("runtime") or 0.0
    if device_kernels:
        calls = sum(k["calls"] for k in device_kernels)
        mean = sum(k["total_seconds"] for k in device_kernels) / calls if calls else 0.0
        if runtime > LAUNCH_BOUND_RUNTIME_SHARE and mean < TINY_KERNEL_S:
            add(
                "launch_bound",
                "Launch-bound: many tiny kernels, and the host spends its time launching "
                "them. Try CUDA graphs or torch.compile to fuse them.",
                f"runtime is {runtime:.1%} of step time; {calls:,} kernels average "
                f"{format_seconds(mean)}.",
            )
    htod = figures.get("htod_share") or 0.0
    if htod > HTOD_SHARE:
        add(
            "host_to_device_copies",
            "Large host-to-device copies: pin_memory=True in the DataLoader and "
            ".to(device, non_blocking=True) let them overlap compute.",
            f"host-to-device copies are {htod:.1%} of step time (over {HTOD_SHARE:.0%}).",
        )
    other = shares.get("other") or 0.0
    if other > IDLE_SHARE:
        add(
            "idle",
            "For part of each step nothing profiled runs: the host sleeps, waits on I/O, a "
            "lock or a synchronisation (.item(), .cpu(), printing a tensor), or runs code "
            "the profiler does not see.",
            f"other is {other:.1%} of step time (over {IDLE_SHARE:.0%}).",
        )
    if not figures.get("device_work"):
        add(*_largest_operators(rows, shares))
    return advice


def _largest_operators(
    rows: Sequence[Mapping[str, Any]], shares: Mapping[str, float | None]
) -> tuple[str, str, str]:
    """CPU-only: the operators that take the most CPU self time (self time: an op's
    children are not counted in it again, so linear, matmul and mm are not listed as
    three costs of one call)."""
    totals: dict[str, float] = {}
    for row in rows:
        if row.get("kind", "operator") == "operator":
            totals[row["operator"]] = totals.get(row["operator"], 0.0) + row["cpu_self_seconds"]
    top = sorted(totals.items(), key=lambda item: -item[1])[:3]
    named = ", ".join(f"{name} {format_seconds(seconds)}" for name, seconds in top) or "none"
    cpu = shares.get("cpu") or 0.0
    return (
        "cpu_only",
        "A CPU-only run: the step is host work. Start with the operators that take the "
        "most (sort by CPU self time, c), then threads (torch.set_num_threads) and batch "
        "size.",
        f"CPU work is {cpu:.1%} of step time; most CPU self time: {named}.",
    )


SOURCES = {
    FROM_PROFILER_STEPS: "the trace's ProfilerStep ranges",
    FROM_WINDOW: "the profiled window's steps",
    FROM_WHOLE_PROFILE: "the whole profile as one step (no step marked in it)",
}


def overview_source(overview: Mapping[str, Any]) -> str:
    """Where the overview's steps came from, and which it dropped, in words."""
    text = SOURCES.get(overview.get("source") or "", "the profile's steps")
    dropped = overview.get("dropped_steps") or []
    if dropped:
        text += (
            f"; step {', '.join(map(str, dropped))} left out: it launched none or too little of "
            "its device work within the profile (the plugin's rule)"
        )
    return text


def device_timeline_line(timeline: Mapping[str, Any] | None) -> str | None:
    """``device timeline (HTA): compute 59%, non-compute 1%, idle 39% of 830.5 ms``."""
    if not timeline:
        return None
    line = (
        f"device timeline (HTA's breakdown): compute {timeline['compute_share']:.0%}, "
        f"non-compute {timeline['non_compute_share']:.0%}, idle {timeline['idle_share']:.0%} "
        f"of {format_seconds(timeline['span_seconds'])}"
    )
    overlap = timeline.get("comm_comp_overlap")
    if overlap is not None:
        line += f"; communication overlapped by compute {overlap:.0%}"
    return line


def overview_lines(overview: Mapping[str, Any]) -> list[str]:
    """The overview as text: shares, the device timeline, then each recommendation and
    its reason."""
    shares = overview.get("shares") or {}
    parts = [
        f"{LABELS.get(name, name)} {share:.0%}"
        for name, share in shares.items()
        if isinstance(share, (int, float)) and share >= 0.005
    ]
    lines = [f"step time ({overview_source(overview)}): " + ", ".join(parts)] if parts else []
    device = device_timeline_line(overview.get("device_timeline"))
    if device:
        lines.append(device)
    for advice in overview.get("recommendations") or []:
        lines.append(f"- {advice['text']} ({advice['because']})")
    return lines
