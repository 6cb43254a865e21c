"""End to end: the real app, a real RSS child and a real profile worker with torch."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

import pytest
from conftest import WORKLOADS
from textual.widgets import Input

from torchscan_tui.run.config import RunConfig
from torchscan_tui.ui.app import create_app

pytestmark = pytest.mark.slow  # real workloads: seconds each


async def test_live_run_of_a_real_workload_then_export(wait, tmp_path):
    config = RunConfig(script=str(WORKLOADS / "tiny.py"), device="cpu")
    app = create_app(config=config)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot, timeout=120)
        assert app.main_screen.state.phase == "done", app.main_screen.state.message
        assert app.main_screen.state.rss["value"] > 50 * 2**20
        names = {row["operator"] for row in app.main_screen.view.rows}
        assert {"aten::mm", "tiny_block"} <= names
        assert any("tiny: done" in line for line in app.main_screen.state.log.lines)
        trace = app.main_screen.state.trace_path
        assert trace and os.path.exists(trace)
        await pilot.press("slash", *"[8, 16]", "enter", "e")
        app.screen.query_one("#export-path", Input).value = str(tmp_path / "mm.csv")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = list(csv.DictReader((tmp_path / "mm.csv").open()))
        assert [row["operator"] for row in rows] == ["aten::mm"]
        await pilot.press("q")
    assert not os.path.exists(trace)  # the private directory is gone after quit


def private_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("torchscan-tui-*"))


async def test_live_failure_shows_the_workloads_error(wait):
    config = RunConfig(script=str(WORKLOADS / "raises.py"), device="cpu")
    app = create_app(config=config)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot, timeout=120)
        assert app.main_screen.state.phase == "failed"
        assert "ValueError: boom from the workload" in app.main_screen.state.message
        assert "raises.py" in app.main_screen.state.message
        assert any("Traceback" in line for line in app.main_screen.state.log.lines)


async def test_an_app_left_without_q_still_removes_its_private_files(wait):
    """An error, or a test leaving run_test, ends the app without q: the trace kept for
    t must not stay behind in the temporary directory."""
    before = private_dirs()
    app = create_app(config=RunConfig(script=str(WORKLOADS / "tiny.py"), device="cpu"))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot, timeout=120)
        assert app.main_screen.state.phase == "done", app.main_screen.state.message
        assert private_dirs() - before  # the run's private directory, with the trace
    assert not private_dirs() - before


async def test_a_training_script_in_the_app_shows_its_steps_and_overview(wait, tmp_path):
    """Issue 18 in the app: a training script with DataLoader workers and no workload(),
    profiled for a window of steps; the header names them, a row's detail gives its time
    per step, and o opens the step overview."""
    from torchscan_tui.ui.screens.overview_screen import OverviewScreen
    from torchscan_tui.ui.widgets.detail_pane import DetailPane

    log = tmp_path / "steps.log"
    config = RunConfig(script=str(WORKLOADS / "trains.py"), args=("--log", str(log)),
                       device="cpu", warmup=1, steps=3)  # fmt: skip
    app = create_app(config=config, show_clock=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await wait(pilot, timeout=180)
        screen = app.main_screen
        assert screen.state.phase == "done", screen.state.message
        assert "steps 2-4 of optimizer.step()" in str(app.query_one("#run-header").render())
        await pilot.press("enter")
        await pilot.pause()
        assert "CPU self per step" in str(
            app.query_one(DetailPane).query_one("#detail-body").render()
        )
        await pilot.press("escape", "o")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        assert len(app.screen.overview["steps"]) == 3


async def test_a_torchrun_job_in_the_app_names_its_straggler_and_its_ranks(wait):
    """Issue 19 in the app: --nproc-per-node 2, both passes under torch.distributed.run."""
    from torchscan_tui.ui.screens.rank_screen import RankScreen

    config = RunConfig(script=str(WORKLOADS / "rank_train.py"), device="cpu", nproc_per_node=2)
    app = create_app(config=config, show_clock=False)
    async with app.run_test(size=(220, 40)) as pilot:
        await wait(pilot, timeout=180)
        screen = app.main_screen
        assert screen.state.phase == "done", screen.state.message
        assert "2 ranks: rank 1 is" in str(app.query_one("#run-header").render())
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, RankScreen) and len(app.screen.per_rank) == 2


async def test_cancelling_a_torchrun_job_stops_saying_its_ranks_stream(until):
    """Issue 26, point 12: after x cancelled a rank job, the header still said each
    rank's rows were streaming in."""
    config = RunConfig(script=str(WORKLOADS / "rank_slow_tail.py"), device="cpu",
                       nproc_per_node=2)  # fmt: skip
    app = create_app(config=config, show_clock=False)
    async with app.run_test(size=(220, 40)) as pilot:
        screen = app.main_screen
        header = lambda: str(app.query_one("#run-header").render())  # noqa: E731
        await until(pilot, lambda: "as it sends them" in header(), timeout=180)
        await pilot.press("x")
        await until(pilot, lambda: screen.state.phase == "cancelled", timeout=60)
        await pilot.pause()
        assert "as it sends them" not in header()
