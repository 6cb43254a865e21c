"""Issue 28 in the app: the peak pass stopped by a key, a failure that stays on screen,
an empty profile that says why, keys that say why they do not apply."""

from __future__ import annotations

import pytest
from conftest import WORKLOADS
from replay import replay_source

from torchscan_tui.run.config import RunConfig
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.kernel_screen import KernelScreen


def screen_text(app, selector: str) -> str:
    return str(app.main_screen.query_one(selector).render())


@pytest.mark.slow
async def test_x_during_the_peak_pass_ends_it_there_and_the_run_is_done(until):
    config = RunConfig(script=str(WORKLOADS / "long_train.py"), device="cpu",
                       args=("1", "4000", "0.05"))  # fmt: skip
    app = create_app(config=config, show_clock=False)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.main_screen
        await until(pilot, lambda: screen.state.phase == "measuring", timeout=120)
        assert screen.view.rows  # the rows are in before the peak pass
        # the footer recomposes after the phase changes its bindings: a frame later
        await until(pilot, lambda: "Stop" in {key.description for key in app.query("FooterKey")},
                    timeout=10)  # fmt: skip
        await until(pilot, lambda: len(screen.state.samples) > 20, timeout=60)  # it runs
        await pilot.press("x")
        await until(pilot, lambda: screen.state.outcome is not None, timeout=60)
        assert screen.state.outcome == "done", screen.state.message
        figures = screen_text(app, "#rss-figures")
        assert "stopped by you" in figures and "up to " in figures
        assert screen.state.rss_status["stopped_by"] == "you"


async def test_a_failed_runs_reason_stays_on_screen_until_the_next_run(wait):
    app = create_app(source=replay_source(outcome="failed"), show_clock=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait(pilot)
        line = screen_text(app, "#notes-line")
        assert line.strip().startswith("✗ failed: replay.py: boom"), line
        for _ in range(3):  # the toast is gone in seconds; the line is the state's
            await pilot.pause(0.2)
        assert "replay.py: boom" in screen_text(app, "#notes-line")


@pytest.mark.slow
async def test_an_empty_profile_says_why_and_sums_no_time(wait):
    app = create_app(config=RunConfig(script=str(WORKLOADS / "no_ops.py"), device="cpu"),
                     show_clock=False)  # fmt: skip
    async with app.run_test(size=(160, 30)) as pilot:
        await wait(pilot, timeout=120)
        assert not app.main_screen.view.rows
        assert screen_text(app, "#notes-line").strip().startswith("⚠ no_rows:")
        header = screen_text(app, "#run-header")
        assert "Σ" not in header  # no "Σ device self 0.0 µs" where nothing was timed


async def test_keys_for_views_this_run_lacks_say_why(wait):
    app = create_app(source=replay_source(), show_clock=False)  # a CPU run, no steps
    async with app.run_test(size=(140, 30)) as pilot:
        await wait(pilot)
        await pilot.press("k", "o", "R")
        await pilot.pause()
        said = {notice.title: notice.message for notice in app._notifications}
        assert said["k"].startswith("No kernels: this profile holds no device work")
        assert said["o"].startswith("No step overview")
        assert said["R"].startswith("One rank")
        assert not isinstance(app.screen, KernelScreen)
