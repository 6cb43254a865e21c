"""What a report says of its steps, in one line: which were profiled and how long each took.

The worker records each profiled step's wall time (``context.steps``, see
``worker/steps.py``); this reads them back for the header, the text summary and the
headless run's last line. Wall times are per step, never sums of self times. Each row
also carries its CPU self time per step (``cpu_self_seconds_per_step``): the min, median
and max over the window's steps, a step where the row did not run counting as zero (it
took no time there), so a compare can tell a change from noise. This module only reads
and words them (the app imports it at start-up); they are computed in
:mod:`.step_spreads`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from torchscan_tui.common.formatting import format_duration, format_seconds

PER_STEP = "cpu_self_seconds_per_step"  # a row's CPU self time, step by step: mean, spread


def step_line(context: Mapping[str, Any]) -> str | None:
    """``steps 2-5 (optimizer.step()): median 2.41 ms, 1.74-2.56 ms``; None without steps."""
    steps = context.get("steps")
    if not isinstance(steps, dict):
        return None
    source = steps.get("source", "steps")
    if steps.get("whole_run"):
        return f"whole run profiled ({steps.get('seen', 0)} step(s) of {source} seen)"
    seconds = [s for s in steps.get("step_seconds") or [] if isinstance(s, (int, float))]
    if not seconds:
        return None
    named = steps.get("profiler_steps")  # a script's own profile: torch's step numbers
    if isinstance(named, list) and named:
        first, last = f"ProfilerStep#{named[0]}", str(named[-1])
    else:
        first = str(int(steps.get("warmup") or 0) + 1)
        last = str(int(first) + len(seconds) - 1)
    span = f"step {first}" if first == last else f"steps {first}-{last}"
    line = f"{span} of {source}: median {format_seconds(statistics.median(seconds))}"
    if len(seconds) > 1:
        line += f", {format_seconds(min(seconds))}-{format_seconds(max(seconds))}"
    return line


def peak_scope(run: Mapping[str, Any] | None) -> str:
    """What the peak-RSS figure covers, when not the whole run as asked: `` (up to step
    412, after 3 min 10 s: stopped by you)`` when the pass was ended early (a key,
    ``--timeout``); `` (up to step K)`` when ``--rss-steps`` ended it there; `` (the whole
    run: it ended before step K)`` when it was asked to and never got there."""
    status = (run or {}).get("rss_status") or {}
    if status.get("stopped_by"):
        steps = status.get("steps")
        after = format_duration((run or {}).get("rss_wall_seconds"))
        where = f"up to step {steps}, after {after}" if steps else f"up to {after} in"
        return f" ({where}: stopped by {status['stopped_by']})"
    if status.get("rss_steps"):
        return f" (up to step {status['rss_steps']})"
    if status.get("rss_steps_unreached"):
        return f" (the whole run: it ended before step {status['rss_steps_unreached']})"
    return ""


OPTIMIZER_STEPS = "optimizer.step()"  # the profiled window's steps, when comparable


def unprofiled_line(
    run: Mapping[str, Any] | None, context: Mapping[str, Any] | None = None
) -> str | None:
    """``12 steps unprofiled: median 212.0 ms (198.3-240.1 ms), profiled 236.0 ms (the
    profiler added 11%); about 2.1 s before the first``: the peak pass's steps, the
    script's own speed without the profiler (the spec: remeasure without profiling),
    beside the profiled window's when both are optimizer steps. None when the pass
    counted no two steps."""
    steps = (run or {}).get("unprofiled_steps")
    if not isinstance(steps, Mapping) or not steps.get("steps"):
        return None
    clean = steps["median_seconds"]
    line = (
        f"{steps['steps']} steps unprofiled: median {format_seconds(clean)} "
        f"({format_seconds(steps['min_seconds'])}-{format_seconds(steps['max_seconds'])})"
    )
    window = (context or {}).get("steps")
    if not isinstance(window, Mapping):
        window = {}
    profiled = window.get("step_seconds")
    comparable = window.get("source") == OPTIMIZER_STEPS and not window.get("profiler_steps")
    if profiled and comparable and clean > 0:
        median = statistics.median(profiled)
        added = median / clean - 1
        said = f"the profiler added {added:.0%}" if added >= 0.02 else "no slower profiled"
        line += f", profiled {format_seconds(median)} ({said})"
    startup = startup_words(run)
    if startup is not None:
        line += f"; {startup}"
    return line


def startup_words(run: Mapping[str, Any] | None) -> str | None:
    """``about 4.1 s before the first (import torch 2.3 s)``: the script's start-up
    (imports, model, first batch), which the profile's window never sees, from the peak
    pass; None where it was not measured."""
    steps = (run or {}).get("unprofiled_steps")
    if not isinstance(steps, Mapping) or steps.get("startup_seconds") is None:
        return None
    words = f"about {format_duration(steps['startup_seconds'])} before the first"
    torch_import = steps.get("torch_import_seconds")
    if torch_import is not None:
        words += f" (import torch {format_duration(torch_import)})"
    return words


def spread_text(row: Mapping[str, Any]) -> str | None:
    """``median 1.2 ms a step, mean 1.3 ms (0.9-1.6 ms over 5 steps)``; None without.

    One profiled step (a ``workload()`` script's default) has no spread to show: its
    median, mean, least and most are the one figure, said once."""
    spread = row.get(PER_STEP)
    if not isinstance(spread, Mapping):  # a dict, or a compact one (formats/compact_records.py)
        return None
    if spread["steps"] == 1:
        return f"{format_seconds(spread['median'])} in the one profiled step (no spread)"
    return (
        f"median {format_seconds(spread['median'])} a step, "
        f"mean {format_seconds(spread.get('mean'))} "
        f"({format_seconds(spread['min'])}-{format_seconds(spread['max'])} over "
        f"{spread['steps']} steps)"
    )
