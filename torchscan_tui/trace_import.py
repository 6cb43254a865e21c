"""Open Chrome/Kineto traces written by plain torch.profiler as operator rows (no torch).

A trace from ``export_chrome_trace`` or ``tensorboard_trace_handler`` holds the same events
the live profiler gives us: each complete (``"X"``) event becomes a
:class:`~torchscan_tui.aggregate.RawEvent` and goes through the same grouping, so rows from a
trace match ``key_averages(group_by_input_shape=True)`` of the profile that wrote it.
CPU self time comes from the nesting of events on each thread; device time from GPU
kernels linked to their launching op through ``External id``; ``[memory]`` instants give
net bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import diagnostics as diag
from .aggregate import RawEvent, aggregate_events
from .gcpause import gc_paused
from .ranking import build_rows, self_time_sums
from .report import SCHEMA_NAME, SCHEMA_VERSION, ReportError, read_json, validate_report

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
SKIPPED_CATEGORIES = frozenset({"Trace", "ac2g", "python_function"})
TRACE_SUFFIXES = (".json", ".json.gz")


def _ns(microseconds: float) -> int:
    return round(float(microseconds) * 1000)


def _thread(value: object) -> int:
    if isinstance(value, int):
        return value
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else hash(value) & 0xFFFFFFFF


def raw_events_from_trace(data: dict) -> list[RawEvent]:
    """The trace's operator, annotation, runtime, kernel and memory events."""
    events = []
    for entry in data.get("traceEvents") or []:
        if not isinstance(entry, dict):
            continue
        phase, category, name = entry.get("ph"), entry.get("cat") or "", entry.get("name", "")
        args = entry.get("args") or {}
        if phase == "i" and name == "[memory]":
            device = "CPU" if args.get("Device Type", 0) == 0 else "CUDA"
            start = _ns(entry.get("ts", 0))
            events.append(
                RawEvent(
                    "[memory]",
                    device,
                    False,
                    _thread(entry.get("tid")),
                    start,
                    start,
                    0,
                    0,
                    [],
                    nbytes=int(args.get("Bytes", 0)),
                )
            )
            continue
        if phase != "X" or category in SKIPPED_CATEGORIES:
            continue
        start = _ns(entry.get("ts", 0))
        end = start + _ns(entry.get("dur", 0))
        on_device = category in DEVICE_CATEGORIES
        external = int(args.get("External id", 0) or 0)
        linked = external if (on_device or "correlation" in args) else 0
        correlation = int(args.get("correlation", 0) or 0) if linked else external
        events.append(
            RawEvent(
                name,
                "CUDA" if on_device else "CPU",
                False,
                _thread(entry.get("tid")),
                start,
                end,
                correlation,
                linked,
                args.get("Input Dims", []) if not on_device else [],
                is_user_annotation=category in ("user_annotation", "gpu_user_annotation"),
                activity_type=category,
            )
        )
    return events


def report_from_trace(data: dict, source: str) -> dict:
    """A report (the schema of :mod:`torchscan_tui.report`) from a loaded trace."""
    events = raw_events_from_trace(data)
    if not events:
        raise ReportError(f"{source} holds no profiler events: is it a torch.profiler trace?")
    aggregation = aggregate_events(events)
    device_measured = aggregation.device_event_count > 0
    rows, ranking = build_rows(aggregation.groups, device_measured=device_measured)
    notes = []
    has_shapes = any(
        "Input Dims" in (entry.get("args") or {})
        for entry in data["traceEvents"][:5000]
        if isinstance(entry, dict)
    )
    if not data.get("record_shapes", has_shapes) or not has_shapes:
        notes.append(
            diag.make(
                "no_shapes_recorded",
                "The trace was recorded without "
                "record_shapes=True: rows group by operator name only.",
            )
        )
    if not device_measured:
        notes.append(
            diag.make(
                "no_device_events_in_trace",
                "The trace holds no GPU kernels: device time is None (not measured), not zero.",
            )
        )
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": rows,
        "context": {
            "device": "cuda" if device_measured else "cpu",
            "row_limit": None,
            "total_grouped_operators": len(rows),
            "ranked_by": ranking,
            "torch_version": None,
            "source": "chrome trace",
            "events": aggregation.event_count,
            "device_events": aggregation.device_event_count,
            **self_time_sums(rows),
        },
        "diagnostics": notes,
        "totals": {"process_peak_rss": None},
        "trace_path": os.path.abspath(source),
        "workload": {"script": None, "host_name": data.get("host_name")},
        "run": {"complete": True},
    }


def traces_in(folder: Path) -> list[Path]:
    """The trace files of a ``tensorboard_trace_handler`` directory, newest first."""
    traces = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
    if not traces:
        raise ReportError(f"{folder} holds no .json or .json.gz trace: pick a trace file")
    return sorted(traces, key=lambda path: path.stat().st_mtime, reverse=True)


def newest_trace_in(folder: Path) -> Path:
    return traces_in(folder)[0]


def open_profile(path: str | os.PathLike) -> tuple[dict, str]:
    """A saved report or a trace (file, .gz, or trace-handler directory) as a report.

    Returns the report and the file it came from. Raises ReportError with a one-line
    message for anything else.
    """
    location = Path(path)
    if location.is_dir():
        location = newest_trace_in(location)
    with gc_paused():
        data = read_json(location)
        if isinstance(data, dict) and "traceEvents" in data:
            return report_from_trace(data, str(location)), str(location)
        return validate_report(data, str(location)), str(location)
