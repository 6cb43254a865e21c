"""profile_workload: run a callable once under torch.profiler and rank its operators.

This is the torch side of the engine: it is imported by the worker and by library users,
never by the UI. The report it returns is a plain dict (see :mod:`torchscan_tui.formats.report`
for the schema) so that it can be saved, streamed and reopened without torch.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.aggregate import aggregate_events
from torchscan_tui.analysis.device_summary import device_context, device_diagnostics, kernel_rows
from torchscan_tui.analysis.profiler_events import (
    EventColumns,
    RawEvent,
    profiler_steps,
    window_events,
)
from torchscan_tui.analysis.ranking import build_rows, self_time_sums
from torchscan_tui.analysis.step_model import FROM_PROFILER_STEPS, Steps, find_steps
from torchscan_tui.analysis.step_spreads import attach_step_spreads
from torchscan_tui.analysis.summaries import summaries
from torchscan_tui.common.gcpause import gc_paused
from torchscan_tui.formats.jsonio import is_json
from torchscan_tui.formats.report import new_report
from torchscan_tui.formats.report_schema import Report
from torchscan_tui.formats.trace.writer import dumps_chrome_trace
from torchscan_tui.worker.steps import StepWindow, WindowComplete

ProgressCallback = Callable[[str], None]
DEFAULT_MAX_EVENTS = 5_000_000


class WorkloadError(Exception):
    """The profiled callable raised; ``report`` holds the rows collected before it did."""

    def __init__(self, original: BaseException, report: dict):
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


def extract_raw_events(kineto_results: Any, device_activity: bool = True) -> list[RawEvent]:
    """Read the fields grouping needs straight from the Kineto results.

    Every method call crosses into C++ (~0.7 us each, 100k events): calls whose answer
    is known are skipped. A torch op's device and annotation flag follow from its
    activity type; without a device activity nothing is linked to anything, so the
    correlation ids, read only to link runtime events and kernels to their op, are 0.
    Tests check both against asking every event.
    """
    raw = []
    append = raw.append
    type_names: dict[Any, str] = {}
    for event in kineto_results.events():
        activity = event.activity_type()
        annotation = TORCH_OP_ANNOTATION.get(activity)
        if annotation is None:
            device_type = event.device_type()
            type_name = type_names.get(device_type)
            if type_name is None:
                type_name = type_names[device_type] = _device_type_name(device_type)
            annotation = event.is_user_annotation()
        else:
            type_name = "CPU"
        name = event.name()
        start_thread = event.start_thread_id()
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
                event.shapes() if type_name == "CPU" else [],
                annotation,
                activity,
                event.nbytes() if name == "[memory]" else 0,
                event.is_hidden_event(),
            )
        )
    return raw


def export_trace_atomically(
    profiler: Any, trace_path: str | os.PathLike, raw_events: list[RawEvent] | None = None
) -> tuple[Path, bool]:
    """Write the Chrome trace via a private directory, check it parses, then move it.

    ``export_chrome_trace`` can fail without raising (one ERROR line and no file), so the
    file is verified before it replaces anything at ``trace_path``. When torch's file is
    not valid JSON (odd names), the trace is rewritten from ``raw_events`` by a writer
    that escapes properly. Returns the path and whether the fallback was used.
    """
    destination = Path(trace_path)
    parent = destination.parent if str(destination.parent) else Path(".")
    private_dir = Path(tempfile.mkdtemp(prefix=".torchscan-trace-", dir=parent))
    used_fallback = False
    try:
        staged = private_dir / "trace.json"
        profiler.export_chrome_trace(str(staged))
        if not staged.exists() or not is_json(staged.read_bytes()):
            # torch wrote nothing (a full disk, say: it does not raise) or no JSON (odd
            # names): our own writer says which, as an OSError (ENOSPC) if it fails too.
            if raw_events is None:
                raise ValueError(f"torch.profiler wrote no valid trace for {destination}")
            staged.write_text(dumps_chrome_trace(raw_events), encoding="utf-8")
            used_fallback = True
        os.chmod(staged, 0o600)
        with open(staged, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(staged, destination)
    finally:
        shutil.rmtree(private_dir, ignore_errors=True)
    return destination, used_fallback


def profile_workload(
    fn: Callable[[], Any],
    *,
    device: str = "cpu",
    trace_path: str | os.PathLike | None = None,
    row_limit: int | None = None,
    on_progress: ProgressCallback | None = None,
    on_rows: Callable[[dict], None] | None = None,
    window: StepWindow | None = None,
) -> Report:
    """Execute ``fn`` once under torch.profiler and return the ranked operator report.

    Shapes and memory are recorded. Rows group operators by (name, input shapes) with call
    counts, CPU and device self time in seconds (device time is ``None`` where it was not
    measured) and CPU net allocation bytes. If ``fn`` raises, the profiler is still
    stopped and a :class:`WorkloadError` carrying the partial report is raised.

    ``window``: profile a window of steps (see :mod:`.steps`) instead of the whole call;
    ``fn`` then runs the steps, and the report's context says which were profiled.

    ``on_rows(report)`` is called once the rows are ranked, before the trace is written
    (0.4-0.6 s for 100k events): a caller that streams the rows need not wait for it. The
    same report then gains ``trace_path`` (and a note if the trace had to be rewritten).
    """
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    progress = on_progress or (lambda phase: None)
    device = resolve_device(device)
    activities = choose_activities(device)
    threads_before = threading.active_count()
    children_before = _children_usage()
    live_before = _live_children()
    failure: BaseException | None = None
    progress("profiling")

    # The class itself, not a script's adopted subclass of it (see ScriptProfiler).
    profile_class = getattr(profile, "adopted_from", profile)

    def new_profile() -> profile:
        return profile_class(activities=activities, record_shapes=True, profile_memory=True)

    def settle() -> None:
        if device == "cuda" and torch.cuda.is_available():
            torch.cuda.synchronize()

    windowed = window is not None
    if window is None:  # the whole call, once: the library's default (and the spec's)
        window = StepWindow(0, 1, run_to_end=True, source="the whole call")

    def mark(name: str) -> None:
        with record_function(name):
            pass

    adopted = window.script_profiler
    if adopted is not None:
        adopted.extract = lambda results: extract_raw_events(
            results, device_activity=any(a != ProfilerActivity.CPU for a in activities)
        )
    # The whole call (no window) records no marker: they would be rows of their own.
    window.start(new_profile, settle, mark if windowed else lambda name: None)
    try:
        fn()
    except WindowComplete:
        pass  # the window is in: the script ends there
    except BaseException as exc:  # noqa: BLE001 - the rows so far are still wanted
        failure = exc
    window.stop()
    prof = window.profile
    progress("aggregating")
    with gc_paused():
        steps: list = []
        step_model: Steps | None = None
        if adopted is not None and adopted.events is not None:
            raw_events = adopted.events  # the script's own profile: its window
            columns = EventColumns.from_events(raw_events)
            step_model = find_steps(columns)
            own = step_model.host if step_model.source == FROM_PROFILER_STEPS else []
            steps = profiler_steps(raw_events, own)
            window.adopt(own)
            prof = adopted.profile  # its trace is the one to export
        else:
            if window.superseded:  # the script's profiler started and recorded nothing
                window.never_recorded()
            raw_events = extract_raw_events(
                prof.profiler.kineto_results,
                device_activity=any(a != ProfilerActivity.CPU for a in activities),
            )
            if windowed and not window.superseded:
                columns = EventColumns.from_events(raw_events)
                step_model = find_steps(columns, first_number=window.warmup + 1)
                window.time_steps(step_model.steps)
                raw_events, steps = window_events(raw_events)
        event_total, max_events = len(raw_events), max_events_allowed()
        aggregation = aggregate_events(raw_events[:max_events])
    cuda_active = ProfilerActivity.CUDA in activities
    notes = diag.report_diagnostics(
        device=device,
        cuda_requested_unsupported=device == "cuda" and not cuda_active,
        cuda_active=cuda_active,
        cuda_available=torch.cuda.is_available(),
        device_events=aggregation.device_event_count,
        threads_started=threading.active_count() > threads_before,
        children_ran=_children_usage() != children_before or bool(_live_children() - live_before),
    )
    if cuda_active:
        notes += device_diagnostics(aggregation)
    if windowed:
        notes += window.notes()
    if event_total > max_events:
        notes.append(diag.events_truncated(max_events, event_total))
    if not aggregation.groups:
        notes.append(diag.no_rows())
    rows, ranking = build_rows(aggregation.groups, device_measured=cuda_active)
    if windowed and window.window_started:
        with gc_paused():
            attach_step_spreads(rows, steps)
    row_notes = [n for n in notes if n["code"] in diag.ROW_LEVEL_CODES]
    for row in rows:
        row["diagnostics"] = list(row_notes)
    total = len(rows)
    sums = self_time_sums(rows)
    if row_limit is not None:
        rows = rows[:row_limit]
    kernels = kernel_rows(aggregation)
    overview = None
    if step_model is not None and window.window_started:
        with gc_paused():
            overview = summaries(columns, step_model, kernels, rows)
    report = new_report(
        operators=rows,
        context={
            "device": device,
            "row_limit": row_limit,
            "total_grouped_operators": total,
            "ranked_by": ranking,
            "torch_version": str(torch.__version__),  # a str subclass encoders refuse
            "activities": [activity.name for activity in activities],
            "events": event_total,
            "events_grouped": aggregation.event_count,
            "max_events": max_events,
            "device_events": aggregation.device_event_count,
            **device_context(aggregation, cuda_active),
            **sums,
            **(window.context() if windowed else {}),
        },
        kernels=kernels,
        overview=overview,
        diagnostics=notes,
        totals={},
    )
    if on_rows is not None:
        on_rows(report)
    if trace_path is not None:
        try:
            written, used_fallback = export_trace_atomically(prof, trace_path, raw_events)
        except (OSError, ValueError) as exc:  # a full disk is no failure of the workload
            notes.append(diag.trace_unavailable(trace_path, exc))
        else:
            report["trace_path"] = str(written)
            if used_fallback:
                notes.append(diag.trace_rewritten())
    if failure is not None:
        raise WorkloadError(failure, report)
    return report
