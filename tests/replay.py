"""Recorded runs for driving the real app without torch: deterministic events."""

from __future__ import annotations

import threading

from torchscan_tui.run.session import (
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RssMeasured,
    RunFinished,
)
from torchscan_tui.run.sources import ReplaySource

MiB = 2**20


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
    report = {
        "schema": "torchscan-tui/report",
        "schema_version": 1,
        "operators": rows,
        "context": context,
        "diagnostics": diagnostics or [],
        "totals": {"process_peak_rss": {"value": 300 * MiB, "launcher_floor": 11 * MiB}},
        "trace_path": trace_path,
        "workload": {"script": "replay.py"},
        "run": {"complete": outcome == "done"},
    }
    events = [PhaseChanged("measuring")]
    events += [OutputLine("workload", "stdout", line) for line in output]
    events.append(
        RssMeasured(
            {"value": 300 * MiB, "launcher_floor": 11 * MiB, "unit": "bytes"},
            {"description": "exited with status 0", "exit_code": 0},
            2.5,
            [[0.1 * i, (50 + 25 * i) * MiB] for i in range(10)],
        )
    )
    events.append(PhaseChanged("profiling"))
    events.append(ProfileMeta(context, diagnostics or [], {}, trace_path))
    events.append(PhaseChanged("receiving"))
    events.append(RowsReceived(rows[:5]))
    events.append(RowsReceived(rows[5:]))
    message = f"{len(rows)} rows from replay.py" if outcome == "done" else "replay.py: boom"
    events.append(RunFinished(outcome, message, report, outcome == "done"))
    return events


def replay_source(hold: threading.Event | None = None, **kwargs) -> ReplaySource:
    return ReplaySource(recorded_events(**kwargs), title="replay.py", hold=hold)
