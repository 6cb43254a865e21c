"""What each profiler activity is: CPU op, runtime call, device work, or neither (pure).

Kineto names every event's activity (a trace's ``cat``, a live event's
``activity_type()``). Device time is only as true as this table: a kernel read as a CPU op
gets CPU self time, a GPU-side annotation read as device work doubles the kernels under it.
Both the trace reader and the live profile classify through :func:`activity_class`, so the
two paths cannot disagree.

Traces written before Kineto's 2022 renaming use other category names (``Operator``,
``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``); :data:`LEGACY_CATEGORIES` maps them to
today's, so the rest of the engine sees one vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable

CPU_OP = "cpu_op"  # a torch operator or record_function range: a row of its own
RUNTIME = "runtime"  # the host-side call into an accelerator's API (cudaLaunchKernel, hip*, ...)
DEVICE_WORK = "device_work"  # a kernel, memcpy or memset executed by an accelerator
DEVICE_ANNOTATION = "device_annotation"  # a range drawn on the device timeline: never summed
DEVICE_WAIT = "device_wait"  # a synchronisation shown on the device timeline: a wait, not work
SKIPPED = "skipped"  # profiler bookkeeping (Trace spans, flows, Python frames)
UNKNOWN = "unknown"  # a category this version cannot place: named in a diagnostic

LEGACY_CATEGORIES = {
    "Operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "User Annotation": "user_annotation",
    "Python": "python_function",
}

_CLASSES = {
    "": CPU_OP,  # a plain Chrome trace event, and a live torch op whose activity is unset
    "cpu_op": CPU_OP,
    "user_annotation": CPU_OP,
    "kernel": DEVICE_WORK,
    "gpu_memcpy": DEVICE_WORK,
    "gpu_memset": DEVICE_WORK,
    "mtia_ccp_events": DEVICE_WORK,
    "gpu_user_annotation": DEVICE_ANNOTATION,
    "cuda_profiler_range": DEVICE_ANNOTATION,
    "mtia_insight": DEVICE_ANNOTATION,
    "cuda_sync": DEVICE_WAIT,
    "Trace": SKIPPED,
    "ac2g": SKIPPED,  # flows (ph s/f): links drawn between events, not events
    "fwdbwd": SKIPPED,
    "async": SKIPPED,
    "async_cpu_to_gpu": SKIPPED,
    "python_function": SKIPPED,
    "overhead": SKIPPED,
    "cpu_instant_event": SKIPPED,
    "external_correlation": SKIPPED,
}
RUNTIME_SUFFIXES = ("_runtime", "_driver")

# Device kinds named in a report's context, from the activities seen (first match wins).
_DEVICE_KINDS = (("mtia_", "mtia"), ("xpu_", "xpu"), ("privateuse1_", "privateuse1"))


def canonical_category(category: str) -> str:
    """Today's name for a category (2021 traces use ``Kernel`` for ``kernel``, ...)."""
    return LEGACY_CATEGORIES.get(category, category)


def activity_class(activity: str) -> str:
    """One of the classes above for a (canonical) activity name."""
    known = _CLASSES.get(activity)
    if known is not None:
        return known
    if activity.endswith(RUNTIME_SUFFIXES):
        return RUNTIME
    return UNKNOWN


def event_classes(activities: list[str], devices: list[str]) -> list[str]:
    """Each event's activity class; one that the table does not place is judged by its
    device, as torch does live (a trace's unknown categories were set apart on reading)."""
    by_activity = {activity: activity_class(activity) for activity in set(activities)}
    if not any(cls in (UNKNOWN, SKIPPED) for cls in by_activity.values()):
        return list(map(by_activity.__getitem__, activities))
    return [
        cls if cls not in (UNKNOWN, SKIPPED) else CPU_OP if device == "CPU" else DEVICE_WORK
        for cls, device in zip(map(by_activity.__getitem__, activities), devices, strict=True)
    ]


def device_kind(activities: Iterable[str], runtime_names: Iterable[str]) -> str | None:
    """The accelerator a profile's device work ran on, for the report's context.

    ``cuda`` unless the runtime calls say otherwise: ROCm keeps Kineto's ``cuda_runtime``
    category but its calls are ``hip*``; MTIA and XPU have categories of their own.
    """
    seen = set(activities)
    for prefix, kind in _DEVICE_KINDS:
        if any(activity.startswith(prefix) for activity in seen):
            return kind
    if any(name.startswith("hip") for name in runtime_names):
        return "rocm"
    if any(activity_class(activity) in (DEVICE_WORK, RUNTIME) for activity in seen):
        return "cuda"
    return None


def transfer_direction(name: str) -> str | None:
    """``HtoD``, ``DtoH``, ``DtoD``, ... of a memcpy, read from its Kineto name; None else.

    Kineto names copies ``Memcpy HtoD (Pageable -> Device)``; memsets ``Memset (Device)``.
    """
    if name.startswith("Memset"):
        return "memset"
    if not name.startswith("Memcpy "):
        return None
    direction = name[len("Memcpy ") :].split(" ", 1)[0]
    return direction or None
