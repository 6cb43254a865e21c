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
from .jsonio import Progress, decode_json, no_progress
from .ranking import build_rows, self_time_sums
from .report import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    ReportError,
    not_json,
    read_file,
    validate_report,
)
from .trace_decode import DecodedTrace, decode_trace

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
SKIPPED_CATEGORIES = frozenset({"Trace", "ac2g", "python_function"})
TRACE_SUFFIXES = (".json", ".json.gz")
NO_SHAPES = b"[]"


def _thread(value: object) -> int:
    if isinstance(value, int):
        return value
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else hash(value) & 0xFFFFFFFF


def raw_events_from_trace(trace_events: list, source: str = "trace") -> list[RawEvent]:
    """The operator, annotation, runtime, kernel and memory events of decoded trace events.

    ``Input Dims`` stay JSON bytes here: grouping keys on them as they are. Times become
    integer nanoseconds. This loop runs once per event, so it builds tuples positionally.
    """
    events: list[RawEvent] = []
    append = events.append
    make = RawEvent._make
    annotations = ("user_annotation", "gpu_user_annotation")
    try:
        for entry in trace_events:
            phase, category, name = entry.ph, entry.cat or "", entry.name
            args = entry.args
            if phase == "i" and name == "[memory]":
                device = "CPU" if args is None or args.device_type == 0 else "CUDA"
                start = round((entry.ts or 0) * 1000)
                nbytes = int(args.nbytes or 0) if args is not None else 0
                thread = _thread(entry.tid)
                append(make(("[memory]", device, False, thread, start, start, 0, 0, [],
                             False, "", nbytes, False)))  # fmt: skip
                continue
            if phase != "X" or category in SKIPPED_CATEGORIES:
                continue
            start = round((entry.ts or 0) * 1000)
            end = start + round((entry.dur or 0) * 1000)
            on_device = category in DEVICE_CATEGORIES
            external = correlation = 0
            shapes = NO_SHAPES
            if args is not None:
                external = int(args.external_id or 0)
                if not on_device and args.input_dims:
                    shapes = bytes(args.input_dims)
                    shapes = NO_SHAPES if shapes == b"null" else shapes
                correlation = args.correlation
            linked = external if (on_device or correlation is not None) else 0
            correlation = int(correlation or 0) if linked else external
            append(make((
                name if type(name) is str else str(name), "CUDA" if on_device else "CPU", False,
                _thread(entry.tid), start, end, correlation, linked, shapes,
                category in annotations, category, 0, False,
            )))  # fmt: skip
    except (TypeError, ValueError) as exc:
        raise ReportError(
            f"{source} has an event with a non-numeric time, id or size ({exc}): "
            "the trace is damaged"
        ) from None
    return events


def _decoded_shapes(shapes: object) -> list:
    """A group's input shapes as a list (they arrive as the trace's JSON bytes)."""
    if isinstance(shapes, bytes):
        value = decode_json(shapes)
        return value if isinstance(value, list) else []
    return shapes


def report_from_trace(trace: DecodedTrace, source: str) -> dict:
    """A report (the schema of :mod:`torchscan_tui.report`) from a decoded trace."""
    events = raw_events_from_trace(trace.events, source)
    if not events:
        raise ReportError(f"{source} holds no profiler events: is it a torch.profiler trace?")
    aggregation = aggregate_events(events)
    for group in aggregation.groups:
        group.input_shapes = _decoded_shapes(group.input_shapes)
    device_measured = aggregation.device_event_count > 0
    rows, ranking = build_rows(aggregation.groups, device_measured=device_measured)
    notes = []
    has_shapes = any(
        entry.args is not None and bool(entry.args.input_dims) for entry in trace.events[:5000]
    )
    recorded = has_shapes if trace.record_shapes is None else trace.record_shapes
    if not recorded or not has_shapes:
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
        "workload": {"script": None, "host_name": trace.host_name},
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


def looks_like_report(data: bytes) -> bool:
    """Whether the file starts as our reports do (the schema key first): then the trace
    decoder's pass over it would be wasted. A file that does not is still read right."""
    return f'"schema": "{SCHEMA_NAME}"'.encode() in data[:256]


def open_profile(path: str | os.PathLike, progress: Progress = no_progress) -> tuple[dict, str]:
    """A saved report or a trace (file, .gz, or trace-handler directory) as a report.

    Returns the report and the file it came from; ``progress(stage, fraction)`` hears of
    reading, parsing and grouping. Raises ReportError with a one-line message for anything
    else.
    """
    location = Path(path)
    if location.is_dir():
        location = newest_trace_in(location)
    source = str(location)
    with gc_paused():
        data = read_file(source, progress)
        try:
            if looks_like_report(data):
                progress("parsing", 0.0)
                document = decode_json(data)
                progress("parsing", 1.0)
            else:
                document = decode_trace(data, progress)
        except ValueError as exc:
            raise not_json(source, exc) from None
        del data
        if isinstance(document, DecodedTrace):
            progress("grouping", 0.0)
            report = report_from_trace(document, source)
            progress("grouping", 1.0)
            return report, source
        return validate_report(document, source), source
