"""What each phase of a run is called, the same in the app's header and headless stderr.

A live run runs the workload twice (see the spec): once whole for the kernel's peak RSS,
once under the profiler. Users were surprised by the second run; every phase says which
of the two it is.
"""

from __future__ import annotations

RUN_PHASES = {
    "measuring": "run 1 of 2, the whole script for peak RSS",
    "loading": "run 2 of 2, the profile: loading the script",
    "profiling": "run 2 of 2, the profile",
    "aggregating": "run 2 of 2, the profile: grouping its events",
}


def phase_words(phase: str, rss_steps: int | None = None) -> str | None:
    """The words for ``phase`` (None: not a phase of the two runs); ``rss_steps``: the
    peak pass stops at that step (``--rss-steps``)."""
    if phase == "measuring" and rss_steps is not None:
        return f"run 1 of 2, the script for peak RSS up to its step {rss_steps}"
    return RUN_PHASES.get(phase)
