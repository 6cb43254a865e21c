"""Open Chrome/Kineto traces written by plain torch.profiler as operator rows (no torch).

A trace from ``export_chrome_trace`` or ``tensorboard_trace_handler`` holds the same events
the live profiler gives us: each complete (``"X"``) event becomes a
:class:`~torchscan_tui.analysis.profiler_events.RawEvent` and goes through the same
grouping, so rows from a trace match ``key_averages(group_by_input_shape=True)`` of the
profile that wrote it.
CPU self time comes from the nesting of events on each thread; device time from the
kernels, copies and memsets each op launched (:mod:`~torchscan_tui.analysis.attribution`);
``[memory]`` instants give net bytes. Times are read exactly: integer microseconds, and
three-decimal ones, become integer nanoseconds with no float rounding, so events that
touch stay touching (see :func:`nanoseconds`).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import replace
from decimal import Decimal
from itertools import repeat
from operator import add, attrgetter, sub
from typing import cast

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.activities import (
    CPU_OP,
    DEVICE_ANNOTATION,
    DEVICE_WAIT,
    DEVICE_WORK,
    RUNTIME,
    UNKNOWN,
    activity_class,
    canonical_category,
)
from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.device_summary import device_context, device_diagnostics, kernel_rows
from torchscan_tui.analysis.memory_timeline import StepSpan, memory_block
from torchscan_tui.analysis.modules import (
    KINETO_MODULE,
    MODULES_FROM_TRACE,
    module_calls,
    module_label,
    module_paths,
    module_tree,
)
from torchscan_tui.analysis.profiler_events import (
    DEVICE_WAIT_ACTIVITY,
    FILTERED_NAMES,
    MEMORY_EVENT_NAME,
    DeviceWait,
    EventColumns,
    PythonFrames,
    RawEvent,
)
from torchscan_tui.analysis.ranking import build_rows, self_time_sums
from torchscan_tui.analysis.records import MemoryBlock, ModulesBlock
from torchscan_tui.analysis.sites import (
    FROM_CALL_STACK,
    FROM_PYTHON_EVENTS,
    call_sites,
    nested_sites,
    python_function_site,
    site_table,
)
from torchscan_tui.analysis.step_model import Steps, find_steps
from torchscan_tui.analysis.summaries import summaries
from torchscan_tui.formats.jsonio import Progress, decode_json, no_progress
from torchscan_tui.formats.report import (
    ReportError,
    incomplete_run,
    new_report,
)
from torchscan_tui.formats.report_schema import Context, Report, accept_rows
from torchscan_tui.formats.trace.allocations import trace_allocations
from torchscan_tui.formats.trace.decode import DecodedTrace

KEPT_CLASSES = frozenset({CPU_OP, RUNTIME, DEVICE_WORK, DEVICE_ANNOTATION})
ON_DEVICE = frozenset({DEVICE_WORK, DEVICE_ANNOTATION})
TIME_LIMIT_NS = 2**63  # no clock a profiler reads goes past it (292 years)
FAST_EXACT_LIMIT_US = 2**42  # below it, round(us * 1000.0) is the exact nanosecond
NO_SHAPES = b"[]"
# Of the "grouping" stage, the share spent turning events into columns (measured: a third).
COLUMNS_SHARE = 0.35
_NAME, _CATEGORY, _TS, _DURATION, _ARGS, _THREAD = map(
    attrgetter, ("name", "cat", "ts", "dur", "args", "tid")
)


def _thread(value: object) -> int:
    if isinstance(value, int):
        return value
    digits = "".join(ch for ch in str(value) if ch.isdigit())
    return int(digits) if digits else hash(value) & 0xFFFFFFFF


def nanoseconds(microseconds: list) -> list[int]:
    """Trace times (microseconds) as exact integer nanoseconds.

    ``ts * 1000.0`` in floats is off by up to ~128 ns at today's epoch values (past
    2**53), enough to make touching events overlap. Integers are multiplied as integers,
    Decimals (read from the text, see ``trace_decode.EXACT_FLOAT_LIMIT_US``) likewise.
    Floats: below :data:`FAST_EXACT_LIMIT_US` the product rounds to the exact nanosecond;
    above it each time's offset from the earliest (exact in floats while all lie within a
    factor 2) is scaled instead; else whole microseconds and fraction are split. Each path
    is exact to the nanosecond for times written to three decimals, and takes only C
    calls per value.
    """
    kinds = set(map(type, microseconds))
    if kinds <= {int}:
        return list(map((1000).__mul__, microseconds))
    if Decimal in kinds:
        return [round(value * 1000) for value in microseconds]
    top, bottom = max(microseconds, default=0), min(microseconds, default=0)
    if bottom >= 0 and top < FAST_EXACT_LIMIT_US:
        # Both the float's own error and the product's rounding stay under 0.25 ns here.
        return list(map(round, map((1000.0).__mul__, microseconds)))
    base = math.floor(bottom)
    if 0 < base and top <= 2 * base:
        # One trace's times lie within a factor 2 of each other, so each one's offset
        # from the earliest is exact in floats (Sterbenz) and small enough to scale.
        offsets = map(round, map((1000.0).__mul__, map(sub, microseconds, repeat(base))))
        return list(map((base * 1000).__add__, offsets))
    wholes = list(map(math.floor, microseconds))
    fractions = map(round, map((1000.0).__mul__, map(sub, microseconds, wholes)))
    return list(map(add, map((1000).__mul__, wholes), fractions))


def _memory_instants(trace_events: list) -> list[RawEvent]:
    """The ``[memory]`` instants (allocations and frees) of decoded trace events."""
    instants = [
        entry for entry in trace_events if entry.ph == "i" and entry.name == MEMORY_EVENT_NAME
    ]
    args = list(map(_ARGS, instants))
    times = nanoseconds(list(map(_TS, instants)))
    return list(
        map(
            RawEvent._make,
            zip(
                repeat(MEMORY_EVENT_NAME),
                ["CPU" if a is None or a.device_type == 0 else "CUDA" for a in args],
                repeat(False),
                [_thread(tid) for tid in map(_THREAD, instants)],
                times,
                times,
                repeat(0),
                repeat(0),
                repeat([]),  # never read: memory instants are not grouped by shape
                repeat(False),
                repeat(""),
                [0 if a is None else int(a.nbytes or 0) for a in args],
                repeat(False),
                repeat(0),  # no FLOPs: a trace does not carry them
            ),
        )
    )


def _stream_number(value: object) -> int:
    """A device event's ``stream`` as HTA reads it: the number, or -1 where it is none."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return -1


def _device_waits(trace_events: list) -> list[DeviceWait]:
    """The synchronisations drawn on a device stream (``cuda_sync`` with a ``stream``):
    busy time of the device timeline as HTA counts it, never an operator's device time."""
    waits = [
        entry
        for entry in trace_events
        if entry.ph == "X"
        and entry.cat == DEVICE_WAIT_ACTIVITY
        and entry.args is not None
        and _stream_number(entry.args.stream) != -1
    ]
    starts = nanoseconds(list(map(_TS, waits)))
    ends = list(map(add, starts, nanoseconds(list(map(_DURATION, waits)))))
    return [
        DeviceWait(str(entry.name), start, end, _stream_number(entry.args.correlation))
        for entry, start, end in zip(waits, starts, ends, strict=True)
    ]


def _placed(trace_events: list) -> tuple[list, list[str], list[str], Counter, set]:
    """The complete events grouping reads, their canonical categories and activity
    classes, how many events of each category it set apart (waits and categories it
    cannot place: named in a diagnostic, never turned into CPU time), and every category
    present (as the trace spells it).

    One pass in Python over the events (the filter); the rest are C-level maps.
    """
    present = set(map(_CATEGORY, trace_events))
    canonical = {
        category: canonical_category(category if type(category) is str else str(category or ""))
        for category in present
    }
    classes = {category: activity_class(name) for category, name in canonical.items()}
    left_out = {category for category, cls in classes.items() if cls not in KEPT_CLASSES}
    complete = [entry for entry in trace_events if entry.ph == "X" and entry.cat not in left_out]
    named = {category for category in left_out if classes[category] in (UNKNOWN, DEVICE_WAIT)}
    set_apart: Counter[str] = Counter()
    if named:
        set_apart = Counter(
            canonical[entry.cat] for entry in trace_events if entry.ph == "X" and entry.cat in named
        )
    raw = list(map(_CATEGORY, complete))
    return (
        complete,
        list(map(canonical.__getitem__, raw)),
        list(map(classes.__getitem__, raw)),
        set_apart,
        present,
    )


PYTHON_FUNCTION = "python_function"


def _python_frames(trace_events: list, args: list) -> PythonFrames | None:
    """Kineto's ``python_function`` events (traces recorded with ``with_stack`` by torch
    2.x) and autograd's sequence numbers of the complete events (``args``, in order)."""
    frames = [e for e in trace_events if e.ph == "X" and e.cat == PYTHON_FUNCTION]
    if not frames:
        return None
    starts = nanoseconds(list(map(_TS, frames)))
    return PythonFrames(
        names=[name if type(name) is str else "" for name in map(_NAME, frames)],
        threads=[t if type(t) is int else _thread(t) for t in map(_THREAD, frames)],
        starts=starts,
        ends=list(map(add, starts, nanoseconds(list(map(_DURATION, frames))))),
        sequence_numbers=[
            -1 if a is None or type(a.sequence) is not int else a.sequence for a in args
        ],
        backward=[a is not None and a.forward_thread not in (0, None) for a in args],
    )


def _framed_sites(
    frames: PythonFrames, ranges: list[str | None], columns: EventColumns
) -> list[str | None]:
    """Each complete event's innermost frame range of ``ranges`` (one per frame) around
    it; a backward op's, its forward op's (analysis/sites.py)."""
    count = len(columns.names)
    return nested_sites(
        [None] * count + ranges,
        columns.threads + frames.threads,
        columns.starts + frames.starts,
        columns.ends + frames.ends,
        frames.sequence_numbers + [-1] * len(ranges),
        frames.backward + [False] * len(ranges),
    )[:count]


def _modules(events: EventColumns, rows: list) -> ModulesBlock | None:
    """The module tree of a trace with Kineto's ``nn.Module`` events (analysis/modules.py)."""
    frames = events.python_frames
    if frames is None or not any(name.startswith(KINETO_MODULE) for name in frames.names):
        return None
    labels = [module_label(name) for name in frames.names]
    paths = module_paths(labels, frames.threads, frames.starts, frames.ends)
    modules = replace(events, sites=_framed_sites(frames, paths, events))
    groups = aggregate_events(modules).groups
    for group in groups:  # keyed as the rows are
        group.input_shapes = _decoded_shapes(group.input_shapes)
    table = site_table(groups)
    return module_tree(rows, table, module_calls(paths), MODULES_FROM_TRACE)


def columns_from_trace(trace_events: list, source: str = "trace") -> EventColumns:
    """The operator, annotation, runtime, kernel and memory events of decoded trace events.

    Complete ("X") events become columns, one comprehension or ``map`` per field: this
    runs over every event of the trace, so no per-event tuple or object is built.
    ``Input Dims`` stay JSON bytes (grouping keys on them as they are); times become
    integer nanoseconds.
    """
    try:
        complete, categories, classes, set_apart, present = _placed(trace_events)
        memory = _memory_instants(trace_events)
        read = len(complete) + len(memory)
        names = list(map(_NAME, complete))
        if set(map(type, names)) - {str}:
            names = [name if type(name) is str else str(name) for name in names]
        if not FILTERED_NAMES.isdisjoint(names):
            kept = [
                (e, n, c, k)
                for e, n, c, k in zip(complete, names, categories, classes, strict=True)
                if n not in FILTERED_NAMES
            ]
            complete, names = [e for e, *_ in kept], [n for _, n, *_ in kept]
            categories, classes = [c for *_, c, _ in kept], [k for *_, k in kept]
        on_device = list(map(ON_DEVICE.__contains__, classes))
        starts = nanoseconds(list(map(_TS, complete)))
        durations = nanoseconds(list(map(_DURATION, complete)))
        ends = list(map(add, starts, durations))
        if min(durations, default=0) < 0 or max(map(abs, ends), default=0) >= TIME_LIMIT_NS:
            raise ValueError("a negative duration, or a time past 292 years")
        args = list(map(_ARGS, complete))
        # 2021 traces spell it "external id" on runtime calls and kernels.
        externals = [
            0 if a is None else int(a.external_id or a.legacy_external_id or 0) for a in args
        ]
        correlations = [None if a is None else a.correlation for a in args]
        if any(on_device) or correlations.count(None) < len(correlations):
            linked_ids = [
                external if device or correlation is not None else 0
                for external, device, correlation in zip(
                    externals, on_device, correlations, strict=True
                )
            ]
            correlation_ids = [
                int(correlation or 0) if linked or correlation is not None else external
                for correlation, linked, external in zip(
                    correlations, linked_ids, externals, strict=True
                )
            ]
        else:  # a CPU trace: no kernel or runtime event links to an operator
            linked_ids, correlation_ids = [0] * len(externals), externals
        shapes = [
            bytes(a.input_dims) if a is not None and a.input_dims and not device else NO_SHAPES
            for a, device in zip(args, on_device, strict=True)
        ]
        threads = [tid if type(tid) is int else _thread(tid) for tid in map(_THREAD, complete)]
        waits = _device_waits(trace_events)
        sites = call_sites([None if a is None else a.call_stack for a in args])
        sites_from = FROM_CALL_STACK if sites else None
        frames = _python_frames(trace_events, args) if PYTHON_FUNCTION in present else None
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ReportError(
            f"{source} has an event with a time, id or size that is not a number or is out "
            f"of range ({exc}): the trace is damaged"
        ) from None
    shared: dict[bytes, bytes] = {}
    columns = EventColumns(
        names=names,
        devices=["CUDA" if device else "CPU" for device in on_device],
        asynchronous=[False] * len(names),
        threads=threads,
        starts=starts,
        ends=ends,
        correlation_ids=correlation_ids,
        linked_ids=linked_ids,
        # Equal shapes as one bytes object: grouping keys on them, matched by identity.
        shapes=[
            NO_SHAPES if shape == b"null" else shared.setdefault(shape, shape) for shape in shapes
        ],
        annotations=[category == "user_annotation" for category in categories],
        activities=categories,
        memory=memory,
        event_count=read,
        set_apart=dict(set_apart),
        device_waits=waits,
        sites=sites,
        sites_from=sites_from,
        python_frames=frames,
    )
    if not sites and frames is not None:
        ranges = [python_function_site(name) for name in frames.names]
        if any(ranges):
            columns.sites = _framed_sites(frames, ranges, columns)
            columns.sites_from = FROM_PYTHON_EVENTS
    return columns


def _memory(trace_events: list, events: EventColumns, steps: Steps) -> MemoryBlock | None:
    """The allocator over the trace, where it recorded memory (formats/trace/allocations.py)."""
    instants = [record for record in events.memory if record.name == MEMORY_EVENT_NAME]
    if not instants:
        return None
    allocations, paired = trace_allocations(
        trace_events, events, [r.start_ns for r in instants], [r.thread for r in instants]
    )
    spans = [StepSpan(step.name, step.start_ns, step.end_ns) for step in steps.steps]
    origin = min([*events.starts, *(r.start_ns for r in instants)])
    block = memory_block(allocations, spans, origin, paired)
    if block is not None:
        block["categories"] = {"missing": TRACE_HAS_NO_CATEGORIES}
    return block


TRACE_HAS_NO_CATEGORIES = (
    "a trace file: torch's memory profiler classifies the tensors of a live profile "
    "(its data flow), not of a trace; a live run of the script shows them"
)


def _decoded_shapes(shapes: object) -> list:
    """A group's input shapes as a list (they arrive as the trace's JSON bytes)."""
    value = decode_json(shapes) if isinstance(shapes, bytes) else shapes
    return value if isinstance(value, list) else []


def _distributed(info: object) -> dict:
    """``distributed``: a rank's trace's rank, world size and backend (``distributedInfo``)."""
    if not isinstance(info, dict):
        return {}
    fields = {
        "rank": info.get("rank") if type(info.get("rank")) is int else None,
        "world_size": info.get("world_size") if type(info.get("world_size")) is int else None,
        "backend": info.get("backend") if isinstance(info.get("backend"), str) else None,
    }
    return {"distributed": fields} if fields["rank"] is not None else {}


def report_from_trace(
    trace: DecodedTrace, source: str, progress: Progress = no_progress, cut_short: bool = False
) -> Report:
    """A report (the schema of :mod:`torchscan_tui.formats.report`) from a decoded trace.

    ``cut_short``: the trace was read up to a cut (:mod:`trace_salvage`): the report is
    marked incomplete, and its first diagnostic and ``run.note`` say why.
    """
    events = columns_from_trace(trace.events, source)
    if not events.event_count:
        if cut_short:
            raise ReportError(f"{source} is cut short before its first profiler event")
        raise ReportError(f"{source} holds no profiler events: is it a torch.profiler trace?")
    progress("grouping", COLUMNS_SHARE)
    aggregation = aggregate_events(events)
    for group in aggregation.groups:
        group.input_shapes = _decoded_shapes(group.input_shapes)
    device_measured = aggregation.device_event_count > 0
    rows, ranking = build_rows(aggregation.groups, device_measured=device_measured)
    try:
        accept_rows(rows)
    except ValueError as exc:  # Input Dims no profiler writes (nested 900 deep, say)
        raise ReportError(
            f"{source} has an event whose Input Dims are not shapes ({exc})"
        ) from None
    cut_note = diag.trace_cut_short(source, aggregation.event_count) if cut_short else None
    notes = [cut_note] if cut_note else []
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
    notes += device_diagnostics(aggregation, events.set_apart)
    kernels = kernel_rows(aggregation)
    steps = find_steps(events)
    context = {
            "device": (aggregation.device_kind or "cuda") if device_measured else "cpu",
            "row_limit": None,
            "total_grouped_operators": len(rows),
            "ranked_by": ranking,
            "torch_version": None,
            "source": "chrome trace",
            **_distributed(trace.distributed),
            "events": aggregation.event_count,
            "device_events": aggregation.device_event_count,
            "call_sites": bool(events.sites),
            **({"call_sites_from": events.sites_from or FROM_CALL_STACK} if events.sites else {
                "call_sites_missing": "this trace has no call stacks: record it with "
                "torch.profiler.profile(with_stack=True)"}),
            **device_context(aggregation, device_measured),
            **self_time_sums(rows),
        }  # fmt: skip
    return new_report(
        operators=rows,
        context=cast(Context, context),
        kernels=kernels,
        overview=summaries(events, steps, kernels, rows),
        memory=_memory(trace.events, events, steps),
        modules=_modules(events, rows),
        diagnostics=notes,
        trace_path=os.path.abspath(source),
        workload={"script": None, "host_name": trace.host_name},
        run=incomplete_run(None, cut_note["message"]) if cut_note else {"complete": True},
    )
