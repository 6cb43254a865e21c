"""The step overview: where each profiled step's time went, and what to try about it.

Each step's span (its first event's start to its last event's end) is split the way the
TensorBoard profiler plugin's overview splits it: every moment goes to the first of these
that was busy then, so nothing is counted twice and the parts add up to the step:

    device kernels > memcpy > memset > runtime (launch calls) > DataLoader wait >
    CPU work (operators on the host) > other (nothing profiled was running)

The shares over the window lead to plain recommendations, each naming the figure that
led to it. Pure: profiler events in, plain dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchscan_tui.analysis.activities import (
    CPU_OP,
    DEVICE_WORK,
    RUNTIME,
    activity_class,
    canonical_category,
    transfer_direction,
)
from torchscan_tui.analysis.profiler_events import MEMORY_NAMES, RawEvent
from torchscan_tui.common.formatting import format_seconds

CATEGORIES = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu", "other")
LABELS = {
    "kernel": "device kernels",
    "memcpy": "memcpy",
    "memset": "memset",
    "runtime": "runtime (launches)",
    "dataloader": "DataLoader wait",
    "cpu": "CPU work",
    "other": "other",
}
DATALOADER_PREFIX = "enumerate(DataLoader)"
DATALOADER_SHARE = 0.10  # above this share of step time, the input pipeline is the lead
LAUNCH_BOUND_RUNTIME_SHARE = 0.30
TINY_KERNEL_S = 10e-6
HTOD_SHARE = 0.10

Interval = tuple[int, int]


def _category(event: RawEvent) -> str | None:
    if event.name in MEMORY_NAMES:
        return None
    cls = activity_class(canonical_category(event.activity_type))
    if cls == DEVICE_WORK:
        direction = transfer_direction(event.name)
        if direction == "memset":
            return "memset"
        return "memcpy" if direction else "kernel"
    if cls == RUNTIME:
        return "runtime"
    if cls == CPU_OP and event.device_type == "CPU":
        return "dataloader" if event.name.startswith(DATALOADER_PREFIX) else "cpu"
    return None


def _union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _minus(intervals: list[Interval], taken: list[Interval]) -> list[Interval]:
    """``intervals`` (merged) without the parts in ``taken`` (merged)."""
    left: list[Interval] = []
    j = 0
    for start, end in intervals:
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


def _length(intervals: list[Interval]) -> int:
    return sum(end - start for start, end in intervals)


def step_breakdown(events: Sequence[RawEvent]) -> dict:
    """One step: its span in seconds and each category's seconds (they add up to it)."""
    spans: dict[str, list[Interval]] = {name: [] for name in CATEGORIES}
    first, last = None, None
    for event in events:
        category = _category(event)
        if category is None or event.end_ns <= event.start_ns:
            continue
        spans[category].append((event.start_ns, event.end_ns))
        first = event.start_ns if first is None else min(first, event.start_ns)
        last = event.end_ns if last is None else max(last, event.end_ns)
    if first is None or last is None:
        return {"seconds": 0.0, **{name: 0.0 for name in CATEGORIES}}
    taken: list[Interval] = []
    parts: dict[str, float] = {}
    for name in CATEGORIES[:-1]:
        own = _minus(_union(spans[name]), taken)
        parts[name] = _length(own) / 1e9
        taken = _union(taken + own)
    total = (last - first) / 1e9
    parts["other"] = max(total - sum(parts.values()), 0.0)
    return {"seconds": total, **parts}


def step_overview(steps: Sequence[Sequence[RawEvent]], kernels: Sequence[dict] = ()) -> dict:
    """Every step's breakdown, the shares over the window, and the recommendations."""
    per_step = [step_breakdown(events) for events in steps]
    total = sum(step["seconds"] for step in per_step)
    shares = {
        name: (sum(step[name] for step in per_step) / total if total else None)
        for name in CATEGORIES
    }
    return {
        "categories": [{"name": name, "label": LABELS[name]} for name in CATEGORIES],
        "steps": per_step,
        "shares": shares,
        "recommendations": recommendations(per_step, shares, kernels, steps),
    }


def recommendations(
    per_step: list[dict],
    shares: dict[str, float | None],
    kernels: Sequence[dict],
    steps: Sequence[Sequence[RawEvent]],
) -> list[dict]:
    """Plain advice from the shares, each with the figure behind it (``because``)."""
    advice: list[dict] = []
    if not per_step or not any(step["seconds"] for step in per_step):
        return advice

    def add(code: str, text: str, because: str) -> None:
        advice.append({"code": code, "text": text, "because": because})

    dataloader = shares.get("dataloader") or 0.0
    if dataloader > DATALOADER_SHARE:
        add(
            "input_bound",
            "The steps wait on the DataLoader: raise num_workers, set pin_memory=True, or "
            "make each sample cheaper to load.",
            f"DataLoader wait is {dataloader:.0%} of step time (over {DATALOADER_SHARE:.0%}).",
        )
    device_kernels = [k for k in kernels if not k.get("direction")]
    runtime = shares.get("runtime") or 0.0
    if device_kernels:
        calls = sum(k["calls"] for k in device_kernels)
        busy = sum(k["total_seconds"] for k in device_kernels)
        mean = busy / calls if calls else 0.0
        if runtime > LAUNCH_BOUND_RUNTIME_SHARE and mean < TINY_KERNEL_S:
            add(
                "launch_bound",
                "Launch-bound: many tiny kernels, and the host spends its time launching "
                "them. Try CUDA graphs or torch.compile to fuse them.",
                f"runtime is {runtime:.0%} of step time; {calls:,} kernels average "
                f"{format_seconds(mean)}.",
            )
    htod = [k for k in kernels if k.get("direction") == "HtoD"]
    memcpy = shares.get("memcpy") or 0.0
    if htod and memcpy > HTOD_SHARE:
        copied = sum(k["total_seconds"] for k in htod)
        add(
            "host_to_device_copies",
            "Large host-to-device copies: pin_memory=True in the DataLoader and "
            ".to(device, non_blocking=True) let them overlap compute.",
            f"memcpy is {memcpy:.0%} of step time; HtoD copies took {format_seconds(copied)}.",
        )
    other = shares.get("other") or 0.0
    if kernels and other > 0.2:
        add(
            "device_idle",
            "The device sits idle for much of each step: look for synchronisations "
            "(.item(), .cpu(), printing tensors) and host work between launches.",
            f"{other:.0%} of step time has nothing profiled running.",
        )
    if not kernels:
        add(*_top_families(steps, shares))
    return advice


def _top_families(steps: Sequence[Sequence[RawEvent]], shares: dict) -> tuple[str, str, str]:
    """CPU-only: the operator families (aten::mm, aten::conv2d, ...) that take the most."""
    totals: dict[str, int] = {}
    for events in steps:
        for event in events:
            if _category(event) == "cpu" and event.name.startswith("aten::"):
                totals[event.name] = totals.get(event.name, 0) + event.end_ns - event.start_ns
    top = sorted(totals.items(), key=lambda item: -item[1])[:3]
    named = ", ".join(f"{name} {format_seconds(ns / 1e9)}" for name, ns in top) or "none"
    cpu = shares.get("cpu") or 0.0
    return (
        "cpu_only",
        "A CPU-only run: the step is host work. Start with the largest operator families "
        "(sort by CPU self time, c), then threads (torch.set_num_threads) and batch size.",
        f"CPU work is {cpu:.0%} of step time; largest aten ops (inclusive): {named}.",
    )


def overview_lines(overview: dict) -> list[str]:
    """The overview as text: shares, then each recommendation and its reason."""
    shares = overview.get("shares") or {}
    parts = [
        f"{LABELS.get(name, name)} {share:.0%}"
        for name, share in shares.items()
        if share is not None and share >= 0.005
    ]
    lines = ["step time: " + ", ".join(parts)] if parts else []
    for advice in overview.get("recommendations") or []:
        lines.append(f"- {advice['text']} ({advice['because']})")
    return lines
