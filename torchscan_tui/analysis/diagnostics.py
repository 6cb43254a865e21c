"""The diagnostics a report or a row can carry: a stable code and a sentence for people.

Codes are what tests and tools match on; messages are what the UI shows. Keeping them in
one place means the worker, the trace importer and the UI say the same thing the same way.
"""

from __future__ import annotations

import os

from torchscan_tui.analysis.records import Note

ROW_LEVEL_CODES = frozenset(
    {"mps_cpu_dispatch_only", "cuda_activity_unsupported", "cuda_unavailable"}
)
DEVICE_UNAVAILABLE_CODES = frozenset({"cuda_activity_unsupported", "cuda_unavailable"})
"""The device asked for could not be profiled: a headless run asked for it fails."""
"""Codes every row carries too: they qualify each row's device figure."""


def make(code: str, message: str) -> Note:
    return {"code": code, "message": message}


def cuda_activity_unsupported() -> Note:
    return make(
        "cuda_activity_unsupported",
        "CUDA time is unavailable: the installed torch profiler lacks CUDA activity support "
        "(no CUPTI / Kineto CUDA build), so device self time is None, not zero.",
    )


def cuda_unavailable() -> Note:
    return make(
        "cuda_unavailable",
        "CUDA was asked for, but this torch sees no CUDA device (torch.cuda.is_available() "
        "is False: a CPU-only build, or no GPU visible): only CPU-side work was profiled, "
        "and device time is None, not zero.",
    )


def mps_cpu_dispatch_only() -> Note:
    return make(
        "mps_cpu_dispatch_only",
        "MPS rows describe CPU dispatch only; GPU time is not measured here. Use "
        "torch.mps.profiler with Instruments for GPU traces.",
    )


def no_device_events() -> Note:
    return make(
        "no_device_events",
        "CUDA profiling was active but no GPU kernel ran: the workload's tensors probably "
        "stayed on the CPU.",
    )


def threads_not_profiled() -> Note:
    return make(
        "threads_not_profiled",
        "The workload started other threads or worker processes (a DataLoader with "
        "num_workers > 0, say); ops run there are not in this profile.",
    )


def trace_rewritten() -> Note:
    return make(
        "trace_rewritten",
        "torch's Chrome trace export was not valid JSON (names with quotes or control "
        "characters), so the trace was rewritten from the raw events by torchscan-tui.",
    )


def trace_bytes_replaced() -> Note:
    return make(
        "trace_bytes_replaced",
        "torch's Chrome trace export held bytes that are not UTF-8 in some names (its "
        "Python tracer's frames, with_stack), so it was not valid JSON: they were written "
        "as U+FFFD, and the rest of torch's trace is kept as it wrote it.",
    )


def worker_processes_not_profiled() -> Note:
    return make(
        "processes_not_profiled",
        "The workload ran child processes (DataLoader workers with num_workers > 0, say); "
        "ops run there are not in this profile.",
    )


def trace_unavailable(path: object, problem: Exception) -> Note:
    code = getattr(problem, "errno", None)
    reason = os.strerror(code).lower() if isinstance(code, int) else problem
    return make(
        "trace_unavailable",
        f"The Chrome trace could not be written to {path} ({reason}): the rows are "
        "complete, the trace is unavailable. Free some space (or pick another --trace "
        "place, or TMPDIR for the app's own copy) and run again for a trace.",
    )


def no_rows() -> Note:
    return make(
        "no_rows",
        "The profile holds no operator. Did the workload run its own torch.profiler? Only "
        "one can be active at a time: remove it and let torchscan-tui profile (or open the "
        "trace it writes). Else it ran no torch operation in the profiled call.",
    )


def events_truncated(kept: int, total: int) -> Note:
    return make(
        "events_truncated",
        f"The profile held {total:,} events; only the first {kept:,} were grouped to keep "
        "the worker's memory bounded (TORCHSCAN_MAX_EVENTS). Rows are incomplete.",
    )


def trace_cut_short(source: str, events: int) -> Note:
    return make(
        "trace_truncated",
        f"{source} is cut short (it ends inside an event, as when the job writing it was "
        f"killed): the rows group the {events:,} events written before the cut, so they "
        "undercount, and events still open at the cut are missing.",
    )


def early_rows(source: str, read_share: float, events: int, device_events: int) -> Note:
    """The rows of a big trace's first part, shown while the rest is read
    (formats/early_rows.py)."""
    device = (
        ""
        if device_events
        else "; no device work in this part (a trace holds its kernels after its operators): "
        "device time comes with the rest"
    )
    return make(
        "early_rows",
        f"the first {events:,} events of {source} ({read_share:.0%} of the file read), "
        f"grouped while the rest is read: calls and times grow and the order may change"
        f"{device}; the whole trace's rows replace these",
    )


def report_diagnostics(
    *,
    device: str,
    cuda_requested_unsupported: bool,
    cuda_active: bool,
    cuda_available: bool = True,
    device_events: int,
    threads_started: bool,
    children_ran: bool,
) -> list[Note]:
    """The report-level diagnostics that follow from what the run observed (pure)."""
    notes = []
    if device == "cuda" and not cuda_available:
        notes.append(cuda_unavailable())
    elif cuda_requested_unsupported:
        notes.append(cuda_activity_unsupported())
    if device == "mps":
        notes.append(mps_cpu_dispatch_only())
    if cuda_active and device_events == 0:
        notes.append(no_device_events())
    if threads_started:
        notes.append(threads_not_profiled())
    if children_ran:
        notes.append(worker_processes_not_profiled())
    return notes
