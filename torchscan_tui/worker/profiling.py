"""profile_workload: run a callable once under torch.profiler and rank its operators.

This is the torch side of the engine: it is imported by the worker and by library users,
never by the UI. The report it returns is a plain dict (see :mod:`torchscan_tui.formats.report`
for the schema) so that it can be saved, streamed and reopened without torch.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.aggregate import Aggregation, aggregate_events
from torchscan_tui.analysis.device_summary import device_context, device_diagnostics, kernel_rows
from torchscan_tui.analysis.modules import MODULES_FROM_STEP, module_tree
from torchscan_tui.analysis.profiler_events import (
    EventColumns,
    RawEvent,
    profiler_steps,
    window_events,
)
from torchscan_tui.analysis.ranking import build_rows, self_time_sums
from torchscan_tui.analysis.records import MemoryBlock, Note
from torchscan_tui.analysis.sites import STEP_AFTER_WINDOW, attach_step_sites
from torchscan_tui.analysis.step_model import FROM_PROFILER_STEPS, Steps, find_steps
from torchscan_tui.analysis.step_spreads import attach_step_spreads
from torchscan_tui.analysis.summaries import summaries
from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.common.text import exception_line
from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.report import new_report
from torchscan_tui.formats.report_schema import Context, Report
from torchscan_tui.run.phases import WorkerPhase
from torchscan_tui.worker.call_sites import SiteStep, StepTables
from torchscan_tui.worker.device_peak import DevicePeak
from torchscan_tui.worker.step_sessions import SessionHarvest, let_go
from torchscan_tui.worker.steps import StepWindow, WindowComplete
from torchscan_tui.worker.trace_export import Mended, export_trace_atomically

ProgressCallback = Callable[[WorkerPhase], None]
DEFAULT_MAX_EVENTS = 5_000_000


class WorkloadError(Exception):
    """The profiled callable raised; ``report`` holds the rows collected before it did."""

    def __init__(self, original: BaseException, report: Report):
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original
        self.report = report


def resolve_device(device: str) -> str:
    """Map ``auto`` to the best available device; validate the others."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    if device not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device must be auto, cpu, cuda or mps, not {device!r}")
    return device


def choose_activities(device: str) -> list:
    """The profiler activities for ``device``: CUDA only where the profiler supports it."""
    from torch.profiler import ProfilerActivity, supported_activities

    activities = [ProfilerActivity.CPU]
    if device == "cuda" and ProfilerActivity.CUDA in supported_activities():
        activities.append(ProfilerActivity.CUDA)
    return activities


def max_events_allowed() -> int:
    """The cap on events grouped (``TORCHSCAN_MAX_EVENTS``), bounding the worker's memory."""
    try:
        return max(int(os.environ.get("TORCHSCAN_MAX_EVENTS", DEFAULT_MAX_EVENTS)), 1)
    except ValueError:
        return DEFAULT_MAX_EVENTS


def _children_usage() -> tuple[float, float]:
    """CPU time of reaped child processes: it moves when the workload ran any."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def _live_children() -> set[int]:
    """This process's children still running (a DataLoader's persistent workers are never
    reaped during the profile, so their CPU time is not in ``RUSAGE_CHILDREN`` yet)."""
    children: set[int] = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as listing:
                children.update(map(int, listing.read().split()))
    except OSError:  # not Linux, or no /proc: multiprocessing knows its own
        import multiprocessing

        children.update(p.pid for p in multiprocessing.active_children() if p.pid)
    return children


def _device_type_name(device_type: Any) -> str:
    name = getattr(device_type, "name", None)
    return name if name is not None else str(device_type).rsplit(".", 1)[-1]


# Events torch records itself (ops and record_function ranges): they are on the CPU, and
# a user annotation exactly when their activity says so. Kineto's other events (runtime
# calls, kernels, instants such as [memory], whose device is the allocation's) are asked.
TORCH_OP_ANNOTATION = {"cpu_op": False, "user_annotation": True}


def undecodable_name(error: UnicodeDecodeError) -> str:
    """An event's name torch could not hand over as text: its bytes (pybind11's error
    holds them), each one that is not UTF-8 shown as U+FFFD. torch's Python tracer now
    and then names a frame of its own threads with such bytes (``with_stack``, 2.13:
    ``torch/profiler/_cupti_monitor.py(0): \\x8f``), and one such name raised out of the
    whole extraction (torch's own ``key_averages`` raises too)."""
    raw = error.object if isinstance(error.object, bytes) else bytes(error.object)
    return raw.decode("utf-8", "replace")


def extract_raw_events(kineto_results: Any, device_activity: bool = True) -> list[RawEvent]:
    """Read the fields grouping needs straight from the Kineto results.

    Every method call crosses into C++ (~0.7 us each, 100k events): calls whose answer
    is known are skipped. A torch op's device and annotation flag follow from its
    activity type; without a device activity nothing is linked to anything, so the
    correlation ids, read only to link runtime events and kernels to their op, are 0.
    Tests check both against asking every event.
    """
    raw: list[RawEvent] = []
    append = raw.append
    type_names: dict[Any, str] = {}
    # One string per distinct name (interned, as the trace reader's and the rows' are)
    # and one list per distinct shapes: torch gives each event its own, ~100 MB of
    # copies at 330k events (a tenth of the worker's peak).
    shapes_of: dict[tuple, list] = {}
    same: dict[Any, Any] = {}  # one object per distinct activity and thread id
    for event in kineto_results.events():
        activity = event.activity_type()
        activity = same.setdefault(activity, activity)
        annotation = TORCH_OP_ANNOTATION.get(activity)
        if annotation is None:
            device_type = event.device_type()
            type_name = type_names.get(device_type)
            if type_name is None:
                type_name = type_names[device_type] = _device_type_name(device_type)
            annotation = event.is_user_annotation()
        else:
            type_name = "CPU"
        try:
            name = sys.intern(event.name())
        except UnicodeDecodeError as exc:  # see undecodable_name
            name = sys.intern(undecodable_name(exc))
        shapes = event.shapes() if type_name == "CPU" else []
        try:
            shapes = shapes_of.setdefault(tuple(map(tuple, shapes)), shapes)
        except TypeError:  # a list of tensors' shapes: kept as it is
            pass
        start_thread = event.start_thread_id()
        start_thread = same.setdefault(start_thread, start_thread)
        append(
            RawEvent(
                name,
                type_name,
                event.is_async() or start_thread != event.end_thread_id(),
                start_thread,
                event.start_ns(),
                event.end_ns(),
                event.correlation_id() if device_activity else 0,
                event.linked_correlation_id() if device_activity else 0,
                shapes,
                annotation,
                activity,
                event.nbytes() if name == "[memory]" else 0,
                event.is_hidden_event(),
                event.flops() if activity == "cpu_op" else 0,
            )
        )
    return raw


class _Before(NamedTuple):
    """What the process had before the workload ran: the notes say what it started."""

    threads: int
    children_usage: tuple[float, float]
    live_children: set[int]

    @classmethod
    def now(cls) -> _Before:
        return cls(threading.active_count(), _children_usage(), _live_children())


class _Recorded(NamedTuple):
    """What a profiled call left: its events (the window's, where one was profiled), the
    profile whose trace is exported (None with a session per step: ``sessions`` holds
    what each left), its steps and the step model found in it."""

    events: list[RawEvent]
    profile: Any
    steps: list
    step_model: Steps | None
    columns: EventColumns | None
    sessions: SessionHarvest | None = None


def profile_workload(
    fn: Callable[[], Any],
    *,
    device: str = "cpu",
    trace_path: str | os.PathLike | None = None,
    row_limit: int | None = None,
    on_progress: ProgressCallback | None = None,
    on_rows: Callable[[Report], None] | None = None,
    window: StepWindow | None = None,
    with_flops: bool = False,
    call_sites: bool = True,
) -> Report:
    """Execute ``fn`` once under torch.profiler and return the ranked operator report.

    Shapes and memory are recorded. Rows group operators by (name, input shapes) with call
    counts, CPU and device self time in seconds (device time is ``None`` where it was not
    measured) and CPU net allocation bytes. If ``fn`` raises, the profiler is still
    stopped and a :class:`WorkloadError` carrying the partial report is raised.

    ``window``: profile a window of steps (see :mod:`.steps`) instead of the whole call;
    ``fn`` then runs the steps, and the report's context says which were profiled.

    ``with_flops``: torch counts each row's FLOPs (matmul, conv, add, mul): off by
    default, as it adds about 10% to the CPU self times (docs/performance.md).

    ``call_sites``: with a window, one step after it is traced for where in the user's
    code each row ran (``worker/call_sites.py``); the rows' times stay the window's.

    ``on_rows(report)`` is called once the rows are ranked, before the trace is written
    (0.4-0.6 s for 100k events): a caller that streams the rows need not wait for it. The
    same report then gains ``trace_path`` (and a note if the trace had to be rewritten).
    """
    progress = on_progress or (lambda phase: None)
    device = resolve_device(device)
    activities = choose_activities(device)
    before = _Before.now()
    progress("profiling")
    windowed = window is not None
    if window is None:  # the whole call, once: the library's default (and the spec's)
        window = StepWindow(0, 1, run_to_end=True, source="the whole call")
    window.with_flops = with_flops
    window.device_peak = DevicePeak(device)
    if windowed and call_sites:
        window.site_step = SiteStep()
    if windowed:  # read a session at a time, outside a job of several ranks
        window.sessions = _sessions(activities, trace_path)
    failure = _run_profiled(fn, window, activities, device, windowed, progress)
    with gc_paused():
        recorded = _recorded(window, activities, windowed)
        traced = window.site_step.tables() if window.site_step is not None else None
        progress("aggregating")
        max_events = max_events_allowed()
        aggregation = aggregate_events(recorded.events[:max_events])
    notes = _notes(device, activities, aggregation, before, window if windowed else None, failure)
    if len(recorded.events) > max_events:
        notes.append(diag.events_truncated(max_events, len(recorded.events)))
    report = _report(recorded, aggregation, notes, device, activities, row_limit,
                     window if windowed else None)  # fmt: skip
    report["context"]["flops_counted"] = window.with_flops  # a script's own profiler too
    report["context"].update(_call_sites(report, traced, window if windowed else None, call_sites))
    if traced is not None:
        with gc_paused():
            report["modules"] = module_tree(report["operators"], traced.modules,
                                            traced.module_calls, MODULES_FROM_STEP,
                                            traced.module_sources)  # fmt: skip
    report["context"]["device_peak"] = window.device_peak.figures()
    with gc_paused():
        report["memory"] = _memory(recorded)
    if report["memory"] is not None:
        report["memory"]["categories"] = (
            traced.memory_categories
            if traced is not None and traced.memory_categories is not None
            else {"missing": report["context"].get("call_sites_missing")
                  or "no step after the window was traced"}
        )  # fmt: skip
    if on_rows is not None:
        on_rows(report)
    if trace_path is not None:
        try:
            written, mended = _export_trace(recorded, trace_path)
        except (OSError, ValueError, ExportError) as exc:  # a full disk fails no workload
            notes.append(diag.trace_unavailable(trace_path, exc))
        else:
            report["trace_path"] = str(written)
            if "bytes_replaced" in mended:
                notes.append(diag.trace_bytes_replaced())
            if "rewritten" in mended:
                notes.append(diag.trace_rewritten())
    if window.sessions is not None:  # the pieces, merged or not (a script's own window)
        window.sessions.discard()
    if failure is not None:
        raise WorkloadError(failure, report)
    return report


def _sessions(activities: list, trace_path: str | os.PathLike | None) -> SessionHarvest:
    """Where a window's sessions go, each of a step or more (worker/step_sessions.py)."""
    device_activity = _device_activity(activities)

    def export_piece(
        profile: Any, piece: Path, events: Callable[[], list[RawEvent]]
    ) -> Mended | None:
        return export_trace_atomically(profile, piece, events)[1]

    return SessionHarvest(
        lambda results: extract_raw_events(results, device_activity), trace_path, export_piece
    )


def _export_trace(recorded: _Recorded, trace_path: str | os.PathLike) -> tuple[Path, set[Mended]]:
    """The trace at ``trace_path``: the profile's, or a window's sessions' merged; and
    how what torch wrote of it was mended (trace_export.py), if any of it was."""
    sessions = recorded.sessions
    if sessions is None or not sessions.sessions:
        path, mended = export_trace_atomically(recorded.profile, trace_path, recorded.events)
        return path, {mended} if mended is not None else set()
    return sessions.merge_trace(), sessions.mended  # its pieces removed by the caller


def _call_sites(
    report: Report, traced: StepTables | None, window: StepWindow | None, asked: bool
) -> Context:
    """Each row its call sites from the traced step, and what the context says of them:
    where they came from, or why there are none."""
    given = attach_step_sites(report["operators"], traced.sites) if traced else 0
    if given:
        assert window is not None and window.site_step is not None
        return {"call_sites": True, "call_sites_from": STEP_AFTER_WINDOW,
                "call_sites_step_seconds": window.site_step.seconds}  # fmt: skip
    if not asked:
        why = "--no-stack was given"
    elif window is None:
        why = "the whole call was profiled, with no step after it to trace"
    elif window.site_step is None or window.adopted or window.superseded:
        why = "the script ran its own torch.profiler, whose window this is"
    else:
        why = window.site_step.missing or "no row of the window ran in the step traced after it"
    return {"call_sites": False, "call_sites_missing": why}


def _device_activity(activities: list) -> bool:
    from torch.profiler import ProfilerActivity

    return any(activity != ProfilerActivity.CPU for activity in activities)


def _run_profiled(
    fn: Callable[[], Any],
    window: StepWindow,
    activities: list,
    device: str,
    windowed: bool,
    progress: ProgressCallback,
) -> BaseException | None:
    """Run ``fn`` under the window's profile(s); what it raised, if anything (the rows
    recorded before it still count). Says "collecting" before the profiler's stop, which
    builds its results (minutes of no progress for millions of events, before)."""
    import torch
    from torch.profiler import profile, record_function

    # The class itself, not a script's adopted subclass of it (see ScriptProfiler).
    profile_class = getattr(profile, "adopted_from", profile)

    def new_profile() -> profile:
        return profile_class(
            activities=activities,
            record_shapes=True,
            profile_memory=True,
            with_flops=window.with_flops,
        )

    def settle() -> None:
        if device == "cuda" and torch.cuda.is_available():
            torch.cuda.synchronize()

    def mark(name: str) -> None:
        with record_function(name):
            pass

    adopted = window.script_profiler
    if adopted is not None:
        device_activity = _device_activity(activities)
        adopted.extract = lambda results: extract_raw_events(results, device_activity)
    # The whole call (no window) records no marker: they would be rows of their own.
    window.start(new_profile, settle, mark if windowed else lambda name: None)
    failure = None
    try:
        fn()
    except WindowComplete:
        pass  # the window is in: the script ends there
    except BaseException as exc:  # noqa: BLE001 - the rows so far are still wanted
        if window.site_step_running and window.site_step is not None:
            # The window is whole; only the step traced after it failed (its tracing,
            # or the script past where the window would have ended it): no call sites.
            missing = f"the step traced after the window raised ({exception_line(exc)})"
            window.site_step.missing = missing
        else:
            failure = exc
    progress("collecting")
    window.stop()
    return failure


def _memory(recorded: _Recorded) -> MemoryBlock | None:
    """The allocator over the recorded events' span (worker/allocations.py)."""
    from torchscan_tui.analysis.memory_timeline import StepSpan, memory_block
    from torchscan_tui.worker.allocations import allocations_of

    timed = [event for event in recorded.events if event.end_ns >= event.start_ns > 0]
    sessions = recorded.sessions
    if not timed or (recorded.profile is None and sessions is None):
        return None
    start = min(event.start_ns for event in timed)
    end = max(event.end_ns for event in timed)
    if sessions is not None:  # a session per step: each one's, taken as it ended
        allocations = sessions.allocations
        if allocations is not None:
            allocations = [item for item in allocations if start <= item.time_ns <= end]
    else:
        allocations = allocations_of(recorded.profile.profiler.kineto_results, start, end)
    if not allocations:
        return None
    model = recorded.step_model
    steps = (
        [StepSpan(step.name, step.start_ns, step.end_ns) for step in model.steps] if model else []
    )
    return memory_block(allocations, steps, start)


def _recorded(window: StepWindow, activities: list, windowed: bool) -> _Recorded:
    """The events of the profile that counts: a script's own profiler's window where it
    ran one (its steps are its own), else ours, cut to the window's steps."""
    adopted = window.script_profiler
    if adopted is not None and adopted.events is not None:
        events = adopted.events  # the script's own profile: its window
        columns = EventColumns.from_events(events)
        step_model = find_steps(columns)
        own = step_model.host if step_model.source == FROM_PROFILER_STEPS else []
        window.adopt(own)
        # its trace is the one to export
        steps = profiler_steps(events, own)
        return _Recorded(events, adopted.profile, steps, step_model, columns)
    if window.superseded:  # the script's profiler started and recorded nothing
        window.never_recorded()
    prof = window.profile
    sessions = window.sessions
    if windowed and not window.superseded and sessions is not None and sessions.sessions:
        # Sessions: the last is read as the others were, and let go before grouping
        # (torch's results and every step's events were held at once before).
        window.profile = None
        sessions.take(prof)
        let_go(prof)  # torch's results go now
        prof = None
        events = sessions.events()
    else:
        events = extract_raw_events(prof.profiler.kineto_results, _device_activity(activities))
        sessions = None
    if not windowed or window.superseded:
        return _Recorded(events, prof, [], None, None)
    columns = EventColumns.from_events(events)
    step_model = find_steps(columns, first_number=window.warmup + 1)
    window.time_steps(step_model.steps)
    events, steps = window_events(events)
    return _Recorded(events, prof, steps, step_model, columns, sessions)


def _notes(
    device: str,
    activities: list,
    aggregation: Aggregation,
    before: _Before,
    window: StepWindow | None,
    failure: BaseException | None,
) -> list[Note]:
    """The report's notes: the device, what the workload started, the window's."""
    import torch
    from torch.profiler import ProfilerActivity

    cuda_active = ProfilerActivity.CUDA in activities
    notes = diag.report_diagnostics(
        device=device,
        cuda_requested_unsupported=device == "cuda" and not cuda_active,
        cuda_active=cuda_active,
        cuda_available=torch.cuda.is_available(),
        device_events=aggregation.device_event_count,
        threads_started=threading.active_count() > before.threads,
        children_ran=_children_usage() != before.children_usage
        or bool(_live_children() - before.live_children),
    )
    if cuda_active:
        notes += device_diagnostics(aggregation)
    if window is not None:
        notes += window.notes(failure)
    return notes


def _report(
    recorded: _Recorded,
    aggregation: Aggregation,
    notes: list[Note],
    device: str,
    activities: list,
    row_limit: int | None,
    window: StepWindow | None,
) -> Report:
    """The ranked rows, the kernels, the step overview and the context, as a report."""
    import torch
    from torch.profiler import ProfilerActivity

    cuda_active = ProfilerActivity.CUDA in activities
    if not aggregation.groups:
        notes.append(diag.no_rows())
    rows, ranking = build_rows(aggregation.groups, device_measured=cuda_active)
    profiled_window = window is not None and window.window_started
    if profiled_window:
        with gc_paused():
            attach_step_spreads(rows, recorded.steps)
    row_notes = [n for n in notes if n["code"] in diag.ROW_LEVEL_CODES]
    for row in rows:
        row["diagnostics"] = list(row_notes)
    total = len(rows)
    sums = self_time_sums(rows)
    if row_limit is not None:
        rows = rows[:row_limit]
    kernels = kernel_rows(aggregation)
    overview = None
    if recorded.step_model is not None and recorded.columns is not None and profiled_window:
        with gc_paused():
            overview = summaries(recorded.columns, recorded.step_model, kernels, rows)
    context: Context = {
        "device": device,
        "row_limit": row_limit,
        "total_grouped_operators": total,
        "ranked_by": ranking,
        "torch_version": str(torch.__version__),  # a str subclass encoders refuse
        "activities": [activity.name for activity in activities],
        "events": len(recorded.events),
        "events_grouped": aggregation.event_count,
        "max_events": max_events_allowed(),
        "device_events": aggregation.device_event_count,
        **device_context(aggregation, cuda_active),
        **sums,
    }
    if window is not None:
        context["steps"] = window.context()["steps"]
    return new_report(
        operators=rows,
        context=context,
        kernels=kernels,
        overview=overview,
        diagnostics=notes,
        totals={},
    )
