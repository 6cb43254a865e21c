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
touch stay touching (see :func:`~torchscan_tui.formats.trace.columns.nanoseconds`); the
events become columns in :mod:`~torchscan_tui.formats.trace.columns`.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from functools import partial
from typing import cast

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.aggregate import Aggregation, aggregate_events
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
from torchscan_tui.analysis.profiler_events import MEMORY_EVENT_NAME, EventColumns
from torchscan_tui.analysis.ranking import build_rows, self_time_sums
from torchscan_tui.analysis.records import MemoryBlock, ModulesBlock, Row
from torchscan_tui.analysis.sites import FROM_CALL_STACK, site_table
from torchscan_tui.analysis.step_model import Steps, find_steps
from torchscan_tui.analysis.summaries import ColumnSummaries, column_summaries, finished
from torchscan_tui.common.forked import Forked, patience
from torchscan_tui.formats.jsonio import Progress, decode_json, no_progress
from torchscan_tui.formats.report import (
    ReportError,
    incomplete_run,
    new_report,
)
from torchscan_tui.formats.report_schema import TRACE_SOURCE, Context, Report, accept_rows
from torchscan_tui.formats.trace.allocations import trace_allocations
from torchscan_tui.formats.trace.columns import (
    TraceColumns,
    framed_sites,
    nanoseconds,
    read_columns,
)
from torchscan_tui.formats.trace.decode import DecodedTrace

__all__ = ["nanoseconds", "report_from_columns", "report_from_trace"]

# Of the "grouping" stage, the share spent turning events into columns (measured: a third),
# and done by the end of each stage after it (a 1M-event trace: grouping 2.6 s, the step
# model 0.5 s, the summaries 1.1 s). Each is a point where a reading nobody waits for
# any more ends (formats/early_rows.py).
COLUMNS_SHARE = 0.35
GROUPED_SHARE, STEPPED_SHARE, SUMMARISED_SHARE = 0.75, 0.83, 0.97
# The blocks over the columns are made beside the grouping from this many events (a
# 1M-event trace's take ~1.5 s, 200k events' ~0.3 s: a fork's ~10 ms and its copied
# pages are paid for; below, a second process is not worth its memory).
FORK_FROM_EVENTS = 200_000


def _modules(events: EventColumns, rows: list) -> ModulesBlock | None:
    """The module tree of a trace with Kineto's ``nn.Module`` events (analysis/modules.py)."""
    frames = events.python_frames
    if frames is None or not any(name.startswith(KINETO_MODULE) for name in frames.names):
        return None
    labels = [module_label(name) for name in frames.names]
    paths = module_paths(labels, frames.threads, frames.starts, frames.ends)
    modules = replace(events, sites=framed_sites(frames, paths, events))
    groups = aggregate_events(modules).groups
    for group in groups:  # keyed as the rows are
        group.input_shapes = _decoded_shapes(group.input_shapes)
    table = site_table(groups)
    return module_tree(rows, table, module_calls(paths), MODULES_FROM_TRACE)


def _memory(read: TraceColumns, steps: Steps) -> MemoryBlock | None:
    """The allocator over the trace, where it recorded memory (formats/trace/allocations.py)."""
    events = read.columns
    instants = [record for record in events.memory if record.name == MEMORY_EVENT_NAME]
    if not instants:
        return None
    allocations, paired = trace_allocations(
        read.memory_args, events, [r.start_ns for r in instants], [r.thread for r in instants]
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
    read = read_columns([trace.events], source)
    return report_from_columns(read, trace, source, progress, cut_short)


def _stepped(events: EventColumns) -> tuple[Steps, ColumnSummaries | None]:
    """What the columns alone give, the rows not needed: the step model and its
    summaries (but their recommendations)."""
    steps = find_steps(events)
    return steps, column_summaries(events, steps)


def _grouped(
    events: EventColumns, source: str, progress: Progress, split: bool
) -> tuple[Aggregation, list[Row], str]:
    """The events grouped (what the rows came from), their rows checked, and the ranking.
    ``split``: a second core may sum half the groups (analysis/groups.py)."""
    aggregation = aggregate_events(events, split=split)
    progress("grouping", GROUPED_SHARE)
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
    return aggregation, rows, ranking


def report_from_columns(
    read: TraceColumns,
    trace: DecodedTrace,
    source: str,
    progress: Progress = no_progress,
    cut_short: bool = False,
    summarise: bool = True,
    fork: bool = True,
) -> Report:
    """As :func:`report_from_trace`, from the trace's events already read into columns
    (``trace``: its other fields; a big file's events are read as it is decoded).
    ``summarise=False``: the rows, kernels and notes alone (no step model, overview,
    memory or modules: a quarter of the time at 1M events), for rows wanted first.

    The step model and the summaries need the columns, not the rows: for a trace of
    :data:`FORK_FROM_EVENTS` events or more they are made in a forked child while this
    process groups the rows (:mod:`~torchscan_tui.common.forked`: a second core's work,
    ~1-1.5 s of a 1M-event trace's ~5), unless ``fork`` is False (the app, whose process
    holds more; a pool of rank readers busy on every core). The report is the same
    either way."""
    events = read.columns
    if not events.event_count:
        if cut_short:
            raise ReportError(f"{source} is cut short before its first profiler event")
        raise ReportError(f"{source} holds no profiler events: is it a torch.profiler trace?")
    progress("grouping", COLUMNS_SHARE)
    fork = fork and summarise and events.event_count >= FORK_FROM_EVENTS
    if fork:
        _ = events.classes  # worked out once, before the fork: both processes read them
    started = time.monotonic()
    stepped: tuple[Steps, ColumnSummaries | None] | None = None
    with Forked(partial(_stepped, events), fork) as blocks:
        aggregation, rows, ranking = _grouped(events, source, progress, split=fork)
        if summarise:
            # A child that has not answered by then is stopped, the blocks made here.
            stepped = blocks.result(timeout=patience(time.monotonic() - started))
    device_measured = aggregation.device_event_count > 0
    cut_note = diag.trace_cut_short(source, aggregation.event_count) if cut_short else None
    notes = [cut_note] if cut_note else []
    has_shapes = read.has_shapes
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
    overview, memory, modules = None, None, None
    if stepped is not None:  # the blocks over the rows
        progress("grouping", STEPPED_SHARE)
        steps, column_part = stepped
        overview = finished(column_part, kernels, rows)
        # Here, after the grouping, not in the child: its ~40 MiB for a memory profile's
        # 100k allocations came on top of the grouping's, past the file's size.
        memory, modules = _memory(read, steps), _modules(events, rows)
        progress("grouping", SUMMARISED_SHARE)
    context = {
            "device": (aggregation.device_kind or "cuda") if device_measured else "cpu",
            "row_limit": None,
            "total_grouped_operators": len(rows),
            "ranked_by": ranking,
            "torch_version": None,
            "source": TRACE_SOURCE,
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
        overview=overview,
        memory=memory,
        modules=modules,
        diagnostics=notes,
        trace_path=os.path.abspath(source),
        workload={"script": None, "host_name": trace.host_name},
        run=incomplete_run(None, cut_note["message"]) if cut_note else {"complete": True},
    )
