"""``o``: the step overview in the app, drawn from the report's overview."""

from __future__ import annotations

import html
import re

from replay import replay_source
from rich.text import Text
from textual.widgets import Static

from torchscan_tui.analysis.profiler_events import EventColumns, RawEvent
from torchscan_tui.analysis.step_model import find_steps
from torchscan_tui.analysis.summaries import summaries
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.overview_screen import OverviewScreen, draw_overview, legend_lines

from .conftest import wait_for_run

MS = 1_000_000


def _event(name, start, end):
    return RawEvent(name, "CPU", False, 1, start * MS, end * MS, 0, 0, [], False, "cpu_op")


def _overview():
    loader = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    columns = EventColumns.from_events([
        _event("ProfilerStep#1", 0, 10), _event(loader, 0, 3), _event("aten::mm", 3, 10),
        _event("ProfilerStep#2", 10, 30), _event(loader, 10, 11), _event("aten::mm", 11, 30),
    ])  # fmt: skip
    return summaries(columns, find_steps(columns))


def screen_text(app) -> str:
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text [^>]*>(.*?)</text>", svg))).replace("\xa0", " ")


async def test_o_shows_each_step_the_shares_and_what_to_try(until):
    app = create_app(source=replay_source(overview=_overview()), show_clock=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_for_run(pilot)
        assert app.main_screen.check_action("overview", ())
        await pilot.press("o")
        await until(pilot, lambda: "What to try" in screen_text(app))
        assert isinstance(app.screen, OverviewScreen)
        text = screen_text(app)
        assert "step 1" in text and "step 2" in text
        assert "DataLoader 13%" in text and "CPU work 87%" in text
        assert "raise num_workers" in text and "because DataLoader is 13.3%" in text
        assert "steps: the trace's ProfilerStep ranges" in text
        await pilot.press("escape")
        assert app.screen is app.main_screen


async def test_o_is_not_offered_without_an_overview():
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for_run(pilot)
        assert app.main_screen.check_action("overview", ()) is False


async def test_o_says_the_start_up_the_window_never_sees(until):
    """Issue 28, point 11: the script's start-up (imports, model, first batch), and its
    import of torch, as the unprofiled peak pass measured them."""
    run = {"unprofiled_steps": {"steps": 4, "median_seconds": 0.2, "min_seconds": 0.1,
                                "max_seconds": 0.3, "startup_seconds": 4.1,
                                "torch_import_seconds": 2.3}}  # fmt: skip
    app = create_app(source=replay_source(overview=_overview(), run=run), show_clock=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_for_run(pilot)
        await pilot.press("o")
        await until(pilot, lambda: "What to try" in screen_text(app))
        text = screen_text(app)
        assert "Before the steps: about 4.1 s before the first step (import torch 2.3 s)" in text
        # a line of its own, not a line break drawn as \x0a (in tmux, 2026-12-02)
        title = str(app.screen.query_one("#chart-title", Static).render())
        assert "\\x0a" not in title and title.splitlines()[1].startswith("Before the steps")


def test_the_legend_wraps_between_its_entries_never_inside_one():
    """At 80 columns the legend wrapped by words: "N communication" ended one line and
    its "0%" began the next."""
    overview = _overview()
    legend = [part for part in draw_overview(overview, 60).renderables if "kernels" in str(part)]
    lines = str(legend[0]).split("\n")
    assert len(lines) > 1 and all(len(line) <= 60 for line in lines)
    entries = re.findall(r"[KCSNRDH·] [a-zA-Z() ]+? (?:\d+%|—)", str(legend[0]))
    assert len(entries) == 8  # every entry whole, on one line
    assert legend_lines([Text("a 1%"), Text("b 2%")], 9).plain == "a 1%\nb 2%"
    assert legend_lines([Text("a 1%"), Text("b 2%")], 11).plain == "a 1%   b 2%"
