"""RunState: what the UI knows of a run, updated from session events (pure)."""

from __future__ import annotations

from torchscan_tui.run.session import OutputLine, PhaseChanged
from torchscan_tui.ui.run_state import RunState


def test_each_run_marker_is_logged_once_per_run():
    state = RunState()
    for event in [
        PhaseChanged("measuring"),
        OutputLine("workload", "stdout", "a"),
        PhaseChanged("profiling"),
        PhaseChanged("loading"),
        PhaseChanged("profiling"),
        OutputLine("profiler", "stderr", "b"),
    ]:
        state.apply(event)
    assert [line for line in state.log.lines if line.startswith("──")] == [
        "── run 1: the whole script, for peak RSS ──",
        "── run 2: the profile worker (torch.profiler) ──",
    ]
    assert list(state.log.lines)[-1] == "! b"
    state.start()
    assert not state.log.lines and not state.markers_logged
