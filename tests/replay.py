"""Recorded runs for driving the real app without torch: deterministic events."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from torchscan_tui.formats.kept_trace import KeptTrace
from torchscan_tui.formats.report import new_report
from torchscan_tui.run.events import (
    Event,
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RssMeasured,
    RunFinished,
)
from torchscan_tui.run.sources import Emit

MiB = 2**20


class ReplaySource:
    """Emits recorded events. With ``hold``, waits before the peak pass (the first
    ``measuring``; else the last event) until released or cancelled, so tests can watch
    (and cancel) a run in progress, its rows in."""

    rerunnable = True
    timed = True

    def __init__(
        self,
        events: Sequence[Event],
        *,
        title: str = "replay.py",
        device: str = "cpu",
        hold: threading.Event | None = None,
    ):
        self.events = list(events)
        self.title = title
        self.device = device
        self.hold = hold
        self.runs = 0
        self.holding = threading.Event()  # set once every event before the hold is out
        self._cancelled = threading.Event()

    def ready_events(self) -> list[Event]:
        return []  # recorded events play as a run sends them

    def run(self, emit: Emit) -> None:
        self.runs += 1
        self._cancelled.clear()
        measuring = [i for i, event in enumerate(self.events)
                     if i and event == PhaseChanged("measuring")]  # fmt: skip
        held = measuring[0] if measuring else len(self.events) - 1
        body, rest = self.events[:held], self.events[held:]
        for event in body:
            emit(event)
        self.holding.set()
        if self.hold is not None:
            while not self.hold.is_set() and not self._cancelled.is_set():
                self.hold.wait(0.01)
        if self._cancelled.is_set():
            last = self.events[-1]
            report = last.report if isinstance(last, RunFinished) else {}
            emit(PhaseChanged("cancelled"))
            emit(RunFinished("cancelled", "cancelled", report, False))
            return
        for event in rest:
            emit(event)

    def damaged_end(self, detail: str | None = None) -> RunFinished:
        raise AssertionError(f"a replay sends no rows as text ({detail})")

    def cancel(self) -> None:
        self._cancelled.set()

    def stop_peak(self) -> bool:
        return False  # a replay's peak pass is recorded: nothing to stop

    def cleanup(self) -> None:
        pass


def make_row(operator, shapes, calls, cpu, device=None, net=0, kind="operator", callers=None):
    return {
        "operator": operator,
        "input_shapes": shapes,
        "kind": kind,
        "calls": calls,
        "cpu_self_seconds": cpu,
        "device_self_seconds": device,
        "cpu_net_bytes": net,
        "callers": callers or {},
        "diagnostics": [],
    }


def sample_rows(with_device: bool = False) -> list[dict]:
    device = (lambda value: value) if with_device else (lambda value: None)
    return [
        make_row(
            "aten::addmm",
            [[64], [8, 16, 64], [64, 64]],
            12,
            0.0042,
            device(0.0100),
            4096,
            callers={"forward": 12},
        ),
        make_row("aten::mm", [[32, 64], [64, 64]], 3, 0.0031, device(0.0002), 8192),
        make_row("aten::cat", [[], []], 40, 0.0020, device(0.0009), -1024),
        make_row("forward", [], 12, 0.0015, device(0.0), -2048, kind="annotation"),
        make_row("aten::relu", [[8, 16, 64]], 12, 0.0011, device(0.0030), 0),
        make_row("aten::mm", [[8, 64], [64, 32]], 7, 0.0007, device(0.0001), 2048),
        make_row("cudaLaunchKernel", [], 90, 0.0005, device(0.0), 0, kind="runtime"),
        make_row("aten::sum", [[8, 16, 64], []], 1, 0.0001, device(0.0004), 4),
    ]


def recorded_events(
    rows=None,
    *,
    diagnostics=None,
    trace_path=None,
    device="cpu",
    outcome="done",
    output=("hello from the workload",),
    overview=None,
    run=None,
    memory=None,
):
    rows = sample_rows() if rows is None else rows
    context = {
        "device": device,
        "row_limit": None,
        "total_grouped_operators": len(rows),
        "ranked_by": "device_self_seconds" if device == "cuda" else "cpu_self_seconds",
        "torch_version": "2.13.0+cpu",
        "cpu_self_seconds_sum": sum(r["cpu_self_seconds"] for r in rows),
        "device_self_seconds_sum": (
            sum(r["device_self_seconds"] for r in rows)
            if rows and rows[0]["device_self_seconds"] is not None
            else None
        ),
    }
    report = new_report(
        operators=rows,
        context=context,
        diagnostics=diagnostics or [],
        totals={"process_peak_rss": {"value": 300 * MiB, "launcher_floor": 11 * MiB}},
        trace_path=trace_path,
        workload={"script": "replay.py"},
        run={"complete": outcome == "done", **(run or {})},
    )
    # As a live run goes: the profile first, then the peak pass.
    events: list[Event] = [PhaseChanged("profiling")]
    events += [OutputLine("profiler", "stdout", line) for line in output]
    head = {"context": context, "diagnostics": diagnostics or [], "trace_path": trace_path}
    if memory:
        head["memory"] = memory
    events.append(ProfileMeta({**head, "overview": overview} if overview else head))
    events.append(PhaseChanged("receiving"))
    events.append(RowsReceived(rows[:5]))
    events.append(RowsReceived(rows[5:]))
    if outcome == "done":  # a failed profile has no peak pass after it
        events.append(PhaseChanged("measuring"))
        events.append(
            RssMeasured(
                {"value": 300 * MiB, "launcher_floor": 11 * MiB, "unit": "bytes"},
                {"description": "exited with status 0", "exit_code": 0},
                2.5,
                [[0.1 * i, (50 + 25 * i) * MiB] for i in range(10)],
            )
        )
    message = f"{len(rows)} rows from replay.py" if outcome == "done" else "replay.py: boom"
    # The source that wrote the trace holds it open, as a live session does.
    kept = KeptTrace.keep(trace_path) if trace_path else None
    events.append(RunFinished(outcome, message, report, outcome == "done", trace=kept))
    return events


def replay_source(hold: threading.Event | None = None, **kwargs) -> ReplaySource:
    return ReplaySource(recorded_events(**kwargs), title="replay.py", hold=hold)
