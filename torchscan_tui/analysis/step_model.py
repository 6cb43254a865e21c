"""The steps of a profile: one model for traces and live windows, with the TensorBoard
plugin's boundary rule (pure: event columns in, steps out).

Where the host says a step is:

* a live window: the worker's markers (``[torchscan] step window start``, ``... step
  end`` between steps, ``... step window end``): step *k* runs from the end of one
  marker to the end of the next, so host time after a step's last op (a sleep, a print)
  is in it; where a step had a profiler session of its own (``... step start``, recorded
  as it began), from that marker's end: the time between was not profiled;
* a trace, or a script's own profiler: its ``ProfilerStep#N`` ranges;
* neither: the whole profile is one step, from the first host op to the last (the
  plugin's step ``0``).

Then the plugin's rule (kineto ``tb_plugin`` ``StepParser._find_device_steps`` and
``_update_steps_duration``) moves the boundaries to where the device work of each step
ends: a step ends when its host range ends or when the last device work launched from
inside it (by a runtime call wholly inside the host range) ends, whichever is later, and
the next step starts where the previous one ended (the first one no earlier than the
device work launched before it). Trailing steps that launched no device work are dropped
(their kernels may not be in the profile), as is a last step that launched fewer than
0.8 times the device work of the step before it; not in a live window, whose end waits
for the device's queue to drain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import compress

from torchscan_tui.analysis.activities import CPU_OP, DEVICE_WORK, RUNTIME
from torchscan_tui.analysis.profiler_events import (
    STEP_END,
    STEP_START,
    WINDOW_END,
    WINDOW_START,
    EventColumns,
)

PROFILER_STEP = "ProfilerStep#"
MARKERS = frozenset({WINDOW_START, STEP_END, STEP_START, WINDOW_END})
TAIL_KEEP_RATIO = 0.8  # the plugin's: a last step with fewer launches is incomplete

# Where a profile's steps came from (``Steps.source``).
FROM_WINDOW = "window"
FROM_PROFILER_STEPS = "ProfilerStep"
FROM_WHOLE_PROFILE = "whole profile"


@dataclass(frozen=True)
class Step:
    """One step: its name (``5`` for ``ProfilerStep#5``) and span in ns."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True)
class Steps:
    """A profile's steps, after the boundary rule; ``host`` are the host ranges before
    it; ``dropped`` names the trailing steps left out and ``source`` says where the steps
    came from (see the constants above)."""

    steps: list[Step]
    host: list[Step]
    source: str
    dropped: list[str]


def host_steps(columns: EventColumns, first_number: int = 1) -> tuple[list[Step], str]:
    """The host's step ranges and where they came from (see the module's docstring).

    ``first_number`` numbers a window's steps (its warm-up steps come before it).
    """
    names, starts, ends = columns.names, columns.starts, columns.ends
    # A marker's end is the boundary: the time recording it took is the step's it ends.
    markers = (
        sorted((ends[index], name) for index, name in enumerate(names) if name in MARKERS)
        if not MARKERS.isdisjoint(names)
        else []
    )
    opened = next((start for start, name in markers if name == WINDOW_START), None)
    if opened is not None:
        closed = next((start for start, name in markers if name == WINDOW_END), None)
        cuts = [
            start
            for start, name in markers
            if name == STEP_END and opened < start and (closed is None or start < closed)
        ]
        if closed is None:  # the run ended inside the window: its completed steps, or
            closed = (
                cuts.pop()
                if cuts
                else max(  # what ran in it when none completed
                    (end for name, end in zip(names, ends, strict=True) if name not in MARKERS),
                    default=opened,
                )
            )
        bounds = [opened, *cuts, closed]
        resumed = [start for start, name in markers if name == STEP_START]
        steps = []
        for index, (low, high) in enumerate(zip(bounds, bounds[1:], strict=False)):
            if index and resumed:  # its own session began after the step before it ended
                low = next((at for at in resumed if low <= at < high), low)
            steps.append(Step(str(first_number + index), low, high))
        return steps, FROM_WINDOW
    classes = columns.classes
    step_names = {name for name in set(names) if name.startswith(PROFILER_STEP)}
    ranges = sorted(
        (starts[index], ends[index], names[index][len(PROFILER_STEP) :])
        for index, name in enumerate(names)
        if name in step_names and classes[index] == CPU_OP and columns.devices[index] == "CPU"
    )
    if ranges:
        return [Step(name, start, end) for start, end, name in ranges], FROM_PROFILER_STEPS
    host_ops = [
        (start, end)
        for start, end, cls, annotation, name in zip(
            starts, ends, classes, columns.annotations, names, strict=True
        )
        if cls == CPU_OP and not annotation and name not in MARKERS
    ]
    if not host_ops:
        return [], FROM_WHOLE_PROFILE
    return [
        Step("0", min(start for start, _ in host_ops), max(end for _, end in host_ops))
    ], FROM_WHOLE_PROFILE


def find_steps(columns: EventColumns, first_number: int = 1) -> Steps:
    """The profile's steps with the plugin's boundary rule (module docstring)."""
    host, source = host_steps(columns, first_number)
    if not host:
        return Steps([], [], source, [])
    classes = columns.classes
    correlations = columns.correlation_ids
    device = [index for index, cls in enumerate(classes) if cls == DEVICE_WORK]
    # Each launch's first device event, and its others where it made more than one: a
    # list per launch was ~16 MiB of a 1M-event trace's 94k launches, each of one kernel.
    launched: dict[int, int] = {}
    more: dict[int, list[int]] = {}
    for index in device:
        correlation = correlations[index]
        if correlation and launched.setdefault(correlation, index) != index:
            more.setdefault(correlation, []).append(index)
    # The runtime calls by (start, end, correlation id): three stable sorts on ints, not
    # a tuple of three int objects per call (at 1M events the open's peak was here).
    runtimes = list(compress(range(len(classes)), map(RUNTIME.__eq__, classes)))
    for key in (correlations, columns.ends, columns.starts):
        runtimes.sort(key=key.__getitem__)
    spans, launches, matched = _device_spans(host, runtimes, (launched, more), columns)
    if not matched:  # no device work launched in any step: the host ranges are the steps
        return Steps(list(host), list(host), source, [])
    first_device = spans[0][0]
    previous_end = host[0].start_ns
    if first_device != math.inf:  # device work launched before the first step ends earlier
        for index in device:
            end = columns.ends[index]
            if index not in matched and end < first_device:
                previous_end = max(previous_end, end)
    steps = []
    for step, (_, device_end) in zip(host, spans, strict=True):
        start = max(previous_end, step.start_ns)
        end = step.end_ns if device_end == -math.inf else max(step.end_ns, int(device_end))
        end = max(end, start)
        steps.append(Step(step.name, start, end))
        previous_end = end
    # A window's end waits for the device (the worker drains its queue), so its last
    # step is whole: the rule for a trace's possibly cut last step does not apply.
    keep = len(steps) if source == FROM_WINDOW else _steps_to_keep(launches)
    return Steps(steps[:keep], list(host), source, [step.name for step in steps[keep:]])


def _device_spans(
    host: list[Step],
    runtimes: list[int],
    launched: tuple[dict[int, int], dict[int, list[int]]],
    columns: EventColumns,
) -> tuple[list[tuple[float, float]], list[int], set[int]]:
    """Each host step's first device start and last device end (inf/-inf when it
    launched none), how many device events it launched, and every device event matched
    to a step: a runtime call (``runtimes``: their events in time order) counts for a
    step when it lies wholly inside its host range. ``launched``: each launch's first
    device event by correlation id, and its others.
    """
    starts, ends, correlations = columns.starts, columns.ends, columns.correlation_ids
    first, more = launched
    spans: list[tuple[float, float]] = []
    launches = [0] * len(host)
    matched: set[int] = set()
    low, high = math.inf, -math.inf
    step_index = call = 0
    while step_index < len(host) and call < len(runtimes):
        step = host[step_index]
        runtime = runtimes[call]
        start, end, correlation = starts[runtime], ends[runtime], correlations[runtime]
        if start < step.start_ns or (end > step.end_ns and start < step.end_ns):
            call += 1  # before the step, or across its end: no step's
        elif end <= step.end_ns:
            found = first.get(correlation) if correlation else None
            for index in () if found is None else (found, *more.get(correlation, ())):
                low = min(low, starts[index])
                high = max(high, ends[index])
                matched.add(index)
                launches[step_index] += 1
            call += 1
        else:  # the call starts after this step: the next step
            spans.append((low, high))
            low, high = math.inf, -math.inf
            step_index += 1
    while len(spans) < len(host):
        spans.append((low, high))
        low, high = math.inf, -math.inf
    return spans, launches, matched


def _steps_to_keep(launches: list[int]) -> int:
    """How many steps to keep: none after the last that launched device work, nor that
    one when it launched fewer than 0.8 times the one before it (cut by the profile)."""
    if len(launches) <= 1:
        return len(launches)
    last = max((index for index, count in enumerate(launches) if count > 0), default=-1)
    if last < 0:
        return len(launches)
    if last > 0 and launches[last - 1] * TAIL_KEEP_RATIO > launches[last]:
        return last
    return last + 1
