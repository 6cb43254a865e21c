"""Which of the profile screen's actions apply now, and why not when they do not (pure).

One table, read twice: by ``check_action`` (an action that does not apply is hidden from
the footer and its key does nothing) and by the screen's key fallback (a key pressed
while its action does not apply says why, instead of nothing: ``t`` on a run without a
trace, ``g`` without device time). A rule reads :class:`Facts`, gathered once from the
run's state, its source and the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Facts:
    """What the rules read: the run, its source, its rows."""

    running: bool = False
    peak_pass: bool = False  # the peak-RSS pass runs (the rows are in): x stops it there
    rerunnable: bool = False
    kept_trace: str | None = None  # the trace held open for t (its path)
    trace_open: bool = False  # ... and still open (a new run closes the last one's)
    named_trace: str | None = None  # the trace the report names (shown, never copied)
    has_report: bool = False
    device_time: bool = False
    kernels: bool = False
    ranks: bool = False
    steps: bool = False
    sites: bool = False  # the rows have call sites (a profile with stacks)
    sites_missing: str | None = None  # why they have none, where the profile says
    memory: bool = False  # the allocator's timeline (a profile with memory)
    modules: bool = False  # the nn.Module tree (module ranges: a traced step, with_stack)
    log: bool = False  # a log to show (a run's output), or the log pane shown
    reading: bool = False  # a trace read in the app: the rows shown, if any, are a part's


@dataclass(frozen=True)
class Rule:
    """When an action applies, and what its key says when it does not (None: nothing)."""

    applies: Callable[[Facts], bool]
    why_not: Callable[[Facts], str | None] | None = None
    title: str = ""
    severity: Severity = "warning"


def _no_trace(facts: Facts) -> str:
    if facts.kept_trace is not None:
        why = f"its trace ({facts.kept_trace}) is gone: the run was replaced"
    elif facts.named_trace and not facts.rerunnable:
        why = (
            f"this report names a trace at {facts.named_trace}, which is only shown, never "
            "copied; to export it, open that trace itself (torchscan-tui FILE)"
        )
    elif facts.named_trace:
        why = f"its trace ({facts.named_trace}) could not be kept"
    else:
        why = "this run or file has no Chrome trace"
    return f"No trace to export: {why}."


NO_DEVICE_TIME = (
    "No device time in this run: it was not measured (CPU-only profile, or the profiler "
    "lacks CUDA support). Rows stay in their current order."
)
NOTHING_TO_RERUN = (
    "A reopened file has no workload to run again: run the script itself for a new profile."
)

NO_MEMORY = (
    "No allocator timeline: this profile recorded no allocations (a trace recorded "
    "without profile_memory=True, or a report from before it was kept)."
)
NO_SITES = (
    "No source lines: this profile has no call stacks. Record a trace with "
    "torch.profiler.profile(with_stack=True) and open it, or run the script itself: "
    "the step after its window is traced for them."
)


def _no_sites(facts: Facts) -> str:
    return f"No source lines: {facts.sites_missing}." if facts.sites_missing else NO_SITES


NO_KERNELS = (
    "No kernels: this profile holds no device work (a CPU-only run, or the profiler "
    "could not see the device). The kernel view lists GPU kernels, memcpy and memset."
)
NO_MODULES = (
    "No module tree: this profile has no nn.Module ranges. A live run takes them in the "
    "step after its window (not with --no-stack, nor when the script ran its own profiler); "
    "a trace needs torch.profiler.profile(with_stack=True)."
)
NO_RANKS = (
    "One rank: the rank view is for a torchrun job (--nproc-per-node) or a folder of "
    "one trace per rank."
)
NO_STEPS = (
    "No step overview: the profile holds no step (no optimizer step or ProfilerStep "
    "was seen, and no window was profiled)."
)


def not_yet(view: str, facts: Facts) -> str:
    """What a view's key says while the run or the reading goes on: its results may
    still come (a key that said nothing there read as a key that does nothing; a big
    trace is read for seconds)."""
    if facts.reading:
        return f"No {view} yet: the trace is still being read."
    return f"No {view} yet: the run's results are not in."


def _view_rule(applies: Callable[[Facts], bool], why: str, key: str, view: str | None) -> Rule:
    """A view over the run's results (kernels, ranks, steps, memory, source lines): it
    applies when the run has what it shows; its key says why not once the run is over,
    and, while it runs, that the results may still come (``view`` None: nothing, where
    they may well never come, as ranks for a run of one process)."""

    def why_not(facts: Facts) -> str | None:
        if not facts.running:
            return why
        return None if view is None else not_yet(view, facts)

    return Rule(applies, why_not, title=key, severity="information")


def _sites_rule(key: str) -> Rule:
    """An action over the rows' call sites (L, E): why not says where they would come from."""
    return Rule(lambda facts: facts.sites,
                lambda facts: not_yet("source lines", facts) if facts.running
                else _no_sites(facts),
                title=key, severity="information")  # fmt: skip


EARLY_ROWS_EXPORT = (
    "The trace is still being read: the rows shown are its first part's (they grow and "
    "may reorder). Export them once it is read."
)

# By action, as the bindings name it (with its argument where one binding of several is
# meant: sort('device')).
RULES: dict[str, Rule] = {
    "cancel_run": Rule(lambda facts: facts.running and not facts.peak_pass),
    "stop_peak": Rule(lambda facts: facts.peak_pass),
    "rerun": Rule(
        lambda facts: facts.rerunnable and not facts.running,
        lambda facts: None if facts.rerunnable else NOTHING_TO_RERUN,
        title="r",
    ),
    "export_trace": Rule(lambda facts: facts.trace_open, _no_trace, title="t"),
    "save_report": Rule(lambda facts: facts.has_report),
    # and the rows screen's own condition: some rows visible (ui/screens/rows_screen.py)
    "export_rows": Rule(
        lambda facts: not facts.reading,
        lambda facts: EARLY_ROWS_EXPORT,
        title="e",
        severity="information",
    ),
    "sort('device')": Rule(
        lambda facts: facts.device_time,
        lambda facts: NO_DEVICE_TIME,
        title="Cannot sort by device time",
    ),
    "kernels": _view_rule(lambda facts: facts.kernels, NO_KERNELS, "k", "kernel view"),
    "ranks": _view_rule(lambda facts: facts.ranks, NO_RANKS, "R", None),
    "overview": _view_rule(lambda facts: facts.steps, NO_STEPS, "o", "step overview"),
    "memory": _view_rule(lambda facts: facts.memory, NO_MEMORY, "M", "allocator timeline"),
    "modules": _view_rule(lambda facts: facts.modules, NO_MODULES, "T", "module tree"),
    "edit_site": _sites_rule("E"),
    "by_line": _sites_rule("L"),
    # A reopened file has no workload output to show.
    "toggle_log": Rule(
        lambda facts: facts.rerunnable or facts.log,
        lambda facts: "A reopened file has no workload output to show.",
        title="l",
        severity="information",
    ),
}


def rule_for(action: str, parameters: tuple[object, ...] = ()) -> Rule | None:
    """The rule of an action as ``check_action`` hears it (a name and its arguments)."""
    if parameters:
        return RULES.get(f"{action}({', '.join(map(repr, parameters))})")
    return RULES.get(action)
