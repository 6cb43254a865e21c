"""The diagnostics a report or a row can carry: a stable code and a sentence for people.

Codes are what tests and tools match on; messages are what the UI shows. Keeping them in
one place means the worker, the trace importer and the UI say the same thing the same way.
"""

from __future__ import annotations


def make(code: str, message: str) -> dict:
    return {"code": code, "message": message}


def cuda_activity_unsupported() -> dict:
    return make(
        "cuda_activity_unsupported",
        "CUDA time is unavailable: the installed torch profiler lacks CUDA activity support "
        "(no CUPTI / Kineto CUDA build), so device self time is None, not zero.",
    )


def mps_cpu_dispatch_only() -> dict:
    return make(
        "mps_cpu_dispatch_only",
        "MPS rows describe CPU dispatch only; GPU time is not measured here. Use "
        "torch.mps.profiler with Instruments for GPU traces.",
    )


def no_device_events() -> dict:
    return make(
        "no_device_events",
        "CUDA profiling was active but no GPU kernel ran: the workload's tensors probably "
        "stayed on the CPU.",
    )


def threads_not_profiled() -> dict:
    return make(
        "threads_not_profiled",
        "The workload started other threads or worker processes (a DataLoader with "
        "num_workers > 0, say); ops run there are not in this profile.",
    )


def device_time_not_measured() -> dict:
    return make(
        "device_time_not_measured",
        "Device self time was not measured in this run (CPU-only profile), so rows cannot be "
        "sorted by it.",
    )
