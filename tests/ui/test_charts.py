"""``b`` in both apps: the bar chart over the rows shown, switched with the sort keys."""

from __future__ import annotations

import pytest
from replay import make_row, replay_source
from textual.widgets import Static

from torchscan_tui.analysis.compare import compare_reports
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.chart_screen import ChartScreen

from .conftest import wait_for_run


def chart_text(app) -> str:
    screen = app.screen
    assert isinstance(screen, ChartScreen)
    title = str(screen.query_one("#chart-title", Static).render())
    body = screen.query_one("#chart-body", Static)
    lines = body.render_lines(body.region.reset_offset)  # what is painted, line by line
    return title + "\n" + "\n".join(line.text for line in lines)


@pytest.mark.slow
async def test_chart_shows_top_operators_follows_the_filter_and_switches_field():
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_run(pilot)
        await pilot.press("b")
        await pilot.pause()
        text = chart_text(app)
        assert "CPU self time" in text and "aten::addmm" in text and "%" in text
        await pilot.press("g")
        await pilot.pause()
        assert "device self time" in chart_text(app) and "not measured" in chart_text(app)
        await pilot.press("escape", "slash", *"relu", "enter", "b")
        await pilot.pause()
        text = chart_text(app)
        assert "filter 'relu'" in text and "aten::addmm" not in text
        await pilot.press("b")
        assert not isinstance(app.screen, ChartScreen)


async def test_compare_chart_draws_faster_left_and_slower_right():
    before = [make_row("aten::mm", [[8]], 1, 0.010), make_row("aten::relu", [[8]], 1, 0.002)]
    after = [make_row("aten::mm", [[8]], 1, 0.004), make_row("aten::relu", [[8]], 1, 0.003)]
    diff = compare_reports({"operators": before}, {"operators": after}, "a.json", "b.json")
    app = create_app(diff=diff)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("b")
        await pilot.pause()
        lines = chart_text(app).splitlines()
        mm = next(line for line in lines if "aten::mm" in line)
        relu = next(line for line in lines if "aten::relu" in line)
        assert mm.index("█") < mm.index("│") and "-6.000 ms" in mm
        assert relu.index("│") < relu.index("█") and "+1.000 ms" in relu
