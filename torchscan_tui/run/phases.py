"""A run's phases and outcomes, named once, and what each is called: the same in the
app's header and headless stderr.

A live run runs the workload twice (see the spec): first under the profiler (a window
of steps: rows within seconds), then whole, unprofiled, for the kernel's peak RSS (a
stop ends it early, the figure then covering what ran). Users were surprised by the
second run; every phase says which of the two it is.
"""

from __future__ import annotations

from typing import Literal, get_args

# What the profile worker says on its channel (run/protocol.py).
WorkerPhase = Literal["loading", "profiling", "collecting", "aggregating", "sending", "tracing"]
# How a run ends.
Outcome = Literal["done", "failed", "cancelled"]
# Every phase a run's events name (the session says the worker's "sending" as "receiving").
Phase = Literal[
    "starting", "measuring", "loading", "profiling", "collecting", "aggregating", "receiving",
    "tracing", "reading", "grouping",
    "opened", "done", "failed", "cancelled",
]  # fmt: skip
OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))
RUNNING: frozenset[str] = frozenset(get_args(Phase)) - OUTCOMES - {"opened"}
# A file being opened in the app: running, but no workload, so no peak-RSS pass to come.
OPENING: frozenset[str] = frozenset({"reading", "grouping"})

# The phases of the two runs, as they are called (headless says these as they come).
RUN_PHASES: dict[str, str] = {
    "loading": "run 1 of 2, the profile: loading the script",
    "profiling": "run 1 of 2, the profile",
    # The profiler's stop builds its results: minutes for millions of events.
    "collecting": "run 1 of 2, the profile: collecting its events",
    "aggregating": "run 1 of 2, the profile: grouping its events",
    "measuring": "run 2 of 2, the whole script for peak RSS",
}
PHASE_WORDS: dict[str, str] = {
    "starting": "starting",
    **RUN_PHASES,
    "receiving": "receiving rows",
    "tracing": "writing the trace",
    # A big trace opened in the app (run/trace_source.py).
    "reading": "reading the trace",
    "grouping": "grouping the trace's events",
    "done": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "opened": "opened from a file",
}
assert set(PHASE_WORDS) == set(get_args(Phase)), "every phase has its words"


def phase_words(phase: str, rss_steps: int | None = None) -> str | None:
    """The words for one of the two runs' phases (None: not one of them); ``rss_steps``:
    the peak pass stops at that step (``--rss-steps``)."""
    if phase == "measuring" and rss_steps is not None:
        return f"run 2 of 2, the script for peak RSS up to its step {rss_steps}"
    return RUN_PHASES.get(phase)
