"""RunState: what the UI knows of a run, updated from session events (pure)."""

from __future__ import annotations

from torchscan_tui.common.line_tail import LineTail
from torchscan_tui.run.events import (
    OutputLine,
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RssMeasured,
    RssSampled,
    RunFinished,
)
from torchscan_tui.ui.run_state import RunState


def test_each_run_marker_is_logged_once_per_run():
    state = RunState()
    for event in [
        PhaseChanged("profiling"),
        OutputLine("profiler", "stdout", "a"),
        PhaseChanged("loading"),
        PhaseChanged("profiling"),
        PhaseChanged("measuring"),
        OutputLine("workload", "stderr", "b"),
    ]:
        state.apply(event)
    assert [line for line in state.log.lines if line.startswith("──")] == [
        "── run 1: the profile worker (torch.profiler) ──",
        "── run 2: the whole script, unprofiled, for peak RSS ──",
    ]
    assert list(state.log.lines)[-1] == "! b"
    state.start()
    assert not state.log.lines and not state.markers_logged


def test_a_run_from_start_to_end_and_rows_never_held_here():
    state = RunState()
    state.start(now=10.0)
    assert state.running and state.elapsed(now=12.5) == 2.5
    assert state.rss is None and state.outcome is None  # missing, not zero
    state.apply(PhaseChanged("measuring"))
    state.apply(RssSampled(0.1, 1000))
    state.apply(RssMeasured({"value": 5000}, {"description": "exited with status 0"}, 1.5, []))
    assert state.rss == {"value": 5000} and state.samples == [[0.1, 1000]]  # kept: none new
    state.apply(ProfileMeta({"context": {"device": "cpu"},
                             "diagnostics": [{"code": "x", "message": "y"}]}))  # fmt: skip
    state.apply(RowsReceived([{"operator": "a"}]))
    assert "rows" not in vars(state) and not hasattr(state, "pending_rows")
    state.apply(RunFinished("done", "ok", {"trace_path": "/t.json"}, True))
    assert not state.running and state.outcome == "done" and state.complete
    assert state.trace_path == "/t.json" and state.context == {"device": "cpu"}


def test_the_log_keeps_its_newest_lines_and_counts_the_rest():
    state = RunState()
    state.log = LineTail(3)
    for i in range(5):
        state.apply(OutputLine("workload", "stdout", str(i)))
    assert list(state.log.lines) == ["  2", "  3", "  4"] and state.log.dropped == 2
    assert state.take_pending_log() == ["  2", "  3", "  4"]
    assert state.take_pending_log() == []


def test_the_phase_says_which_run_of_two_and_which_step_of_the_window_is_running():
    """Issue 20, 11: the script runs twice; each phase says which run it is."""
    state = RunState()
    state.apply(PhaseChanged("profiling"))
    assert state.phase_label() == "run 1 of 2, the profile"
    state.apply(PhaseChanged("profiling", 3, 6))
    assert state.phase_label() == "run 1 of 2, the profile: step 3 of 6"
    state.apply(PhaseChanged("aggregating"))
    assert state.phase_label() == "run 1 of 2, the profile: grouping its events"
    state.apply(PhaseChanged("measuring"))
    assert state.phase_label() == "run 2 of 2, the whole script for peak RSS"
