"""The UI against hostile runs: failing sources, floods, tiny terminals, quitting mid-run."""

from __future__ import annotations

import time

import pytest
from conftest import WORKLOADS  # noqa: I001 - tests/ is on sys.path
from proc_helpers import alive
from replay import ReplaySource, recorded_events, replay_source

from torchscan_tui.run.config import RunConfig
from torchscan_tui.run.events import OutputLine, RowsReceived
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.log_pane import LogPane


class ExplodingSource(ReplaySource):
    """Emits the first rows, then its thread raises: a bug in the source itself."""

    def run(self, emit):
        for event in self.events:
            if isinstance(event, RowsReceived):
                emit(event)
                break
            emit(event)
        raise RuntimeError("source thread blew up")


def written(pids_file) -> bool:
    """Whether the sleeper has written all its processes' ids (a whole line)."""
    return pids_file.exists() and pids_file.read_text().endswith("\n")


async def test_a_failing_source_thread_becomes_a_notification_and_keeps_rows(wait):
    app = create_app(source=ExplodingSource(recorded_events()), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)  # the failure ends the run (waiting on the worker re-raises it)
        assert app.main_screen.state.phase == "failed"
        assert any("source thread blew up" in n.message for n in app._notifications)
        assert len(app.main_screen.view.visible) == 5  # the rows already shown stay
        await pilot.press("q")
    assert app.return_code == 1


async def test_an_output_flood_is_bounded_and_counted(wait):
    flood = [f"line {i} " + "x" * 80 for i in range(30_000)]
    events = recorded_events()
    events[1:1] = [OutputLine("workload", "stdout", line) for line in flood]
    app = create_app(source=ReplaySource(events), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert len(app.main_screen.state.log.lines) == app.main_screen.state.log.limit
        run_markers, hello = 2, 1  # "── run 1 ..." and "── run 2 ...", and the replay's line
        assert (
            app.main_screen.state.log.dropped
            == 30_000 + hello + run_markers - app.main_screen.state.log.limit
        )
        assert "earlier lines dropped" in app.query_one(LogPane).border_title
        assert len(app.main_screen.view.visible) == 8


@pytest.mark.slow
async def test_tiny_terminals_and_resizing_never_crash(wait):
    hold = __import__("threading").Event()
    app = create_app(source=replay_source(hold=hold), show_clock=False)
    async with app.run_test(size=(20, 5)) as pilot:
        while len(app.main_screen.view.rows) < 8:
            await pilot.pause()
        for size in [(20, 5), (30, 8), (200, 50), (21, 6), (80, 24)]:
            await pilot.resize_terminal(*size)
            await pilot.press("down", "enter", "l")
            await pilot.pause()
        hold.set()
        await wait(pilot)
        await pilot.resize_terminal(20, 5)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert app.main_screen.state.phase == "done"


@pytest.mark.slow  # a live run: a subprocess importing torch
async def test_quit_during_a_live_run_is_quick_and_leaves_nothing(until, tmp_path):
    pids_file = tmp_path / "pids"
    config = RunConfig(
        script=str(WORKLOADS / "sleeps.py"), args=(str(pids_file),), device="cpu", grace_seconds=0.5
    )
    app = create_app(config=config)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: written(pids_file), timeout=60)
        pids = [int(pid) for pid in pids_file.read_text().split()]
        started = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - started < 2.5
    assert not any(alive(pid) for pid in pids)


@pytest.mark.slow
async def test_cancel_a_live_run_then_rerun_reads_cancelled(wait, until, tmp_path):
    pids_file = tmp_path / "pids"
    config = RunConfig(
        script=str(WORKLOADS / "sleeps.py"), args=(str(pids_file),), device="cpu", grace_seconds=0.5
    )
    app = create_app(config=config)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await until(pilot, lambda: written(pids_file), timeout=60)
        pids = [int(pid) for pid in pids_file.read_text().split()]
        await pilot.press("x")
        await wait(pilot)
        assert app.main_screen.state.phase == "cancelled"
        assert not any(alive(pid) for pid in pids)
        peak = str(app.query_one("#rss-figures").render())
        # The profile runs first: a cancel there leaves no peak, and the panel says why.
        assert "cancelled during the profile, before the peak-RSS pass" in peak
        assert app.main_screen.check_action("rerun", ())
        pids_file.unlink()
        await pilot.press("r")
        await until(pilot, lambda: written(pids_file), timeout=60)
        await pilot.press("q")


async def test_the_app_says_when_it_ended_processes_the_workload_left(wait):
    """Issue 16, point 11: say in the UI what was killed (here a recorded run whose
    worker reaped two leftovers)."""
    from replay import ReplaySource, recorded_events

    from torchscan_tui.run.events import RunFinished

    events = recorded_events()
    finished = events[-1]
    report = {**finished.report, "run": {"complete": True, "profile_leftovers": 2}}
    events[-1] = RunFinished("done", finished.message, report, True)
    app = create_app(source=ReplaySource(events, title="replay.py"), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        said = [notice.message for notice in app._notifications]
        assert any("left 2 process(es) running" in text for text in said)
