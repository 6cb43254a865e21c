"""Issue 30 (the part built): M, the allocator over the window in the app."""

from __future__ import annotations

import csv

import pytest
from replay import replay_source
from textual.widgets import Input

from torchscan_tui.analysis.memory_timeline import Allocation, StepSpan, memory_block
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.export_dialog import ExportDialog
from torchscan_tui.ui.screens.memory_screen import (
    MemoryScreen,
    curve_text,
    draw_rss,
    step_marks,
    time_axis,
)

from .conftest import wait_for_run
from .test_overview_screen import screen_text


def _block():
    records = [
        Allocation(10, 1, 512, 512, "cpu", "aten::ones", [[], []]),
        Allocation(20, 2, 4_000_000, 4_000_512, "cpu", "aten::ones", [[], []]),
        Allocation(30, 2, -4_000_000, 512, "cpu", None, []),
    ]
    return memory_block(records, [StepSpan("3", 0, 15), StepSpan("4", 16, 40)], 0)


@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_m_shows_the_curve_the_peak_and_what_it_held_and_exports_it(until, tmp_path):
    app = create_app(source=replay_source(memory=_block()), show_clock=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for_run(pilot)
        assert app.main_screen.check_action("memory", ())
        await pilot.press("M")
        await until(pilot, lambda: isinstance(app.screen, MemoryScreen))
        text = screen_text(app)
        assert "cpu allocator  peak +3.8 MiB over the window's start" in text
        assert "at step 4, in aten::ones" in text and "▲ peak" in text
        assert "4,000,000 B" in text and "held at the peak" in text
        assert "Peak RSS 300.0 MiB: the kernel's figure for the whole process" in text
        await pilot.press("e")  # what was held, as rows to export
        assert isinstance(app.screen, ExportDialog)
        target = tmp_path / "memory.csv"
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        row, *_ = rows = list(csv.DictReader(target.open()))
        assert row["operator"] == "aten::ones" and row["size"] == "4000000"  # largest first
        assert len(rows) == len(_block()["devices"][0]["held_at_peak"])
        assert row["what"] == "held at the window's peak"
        await pilot.press("escape")
        assert app.screen is app.main_screen


async def test_m_without_allocations_says_why():
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for_run(pilot)
        assert app.main_screen.check_action("memory", ()) is False


def test_the_curve_puts_its_highest_block_at_the_peak():
    timeline = [[0.0, 0], [0.5, 100], [1.0, 10]]
    curve = curve_text(timeline, 11).plain
    assert len(curve) == 11 and curve[5] == "█" and curve[0] != "█"


def test_the_peak_passs_rss_curve_has_its_axis():
    lines = draw_rss([[0.0, 100.0], [1.0, 300.0], [2.5, 200.0]], 60)
    assert lines[0].plain.startswith("process RSS over the peak pass")
    assert "█" in lines[1].plain and lines[2].plain.endswith("2.500 s")
    assert len(lines[2].plain) == len(lines[1].plain)  # its end under the curve's end
    assert draw_rss([[0.0, 1.0]], 60) == []  # one sample is no curve


def test_a_short_window_s_axis_and_peak_read_in_the_apps_units():
    """A 107 ms step read "0.107 s" under its curve and "0.080 s into the window" where
    the header and rows said 107.528 ms: one unit throughout, as format_seconds says."""
    assert time_axis(0.107528, 40).plain == "0" + " " * 29 + "107.528 ms"
    assert time_axis(2.5, 12).plain == "0    2.500 s"
    assert time_axis(0.5, 4).plain == "0 500.000 ms"  # too narrow: still one space apart


def test_step_boundaries_are_marked_under_the_curve_on_its_time_axis():
    """Issue 30, point 1: each step's start under the curve, named where there is room."""
    marks = step_marks([["2", 0.0], ["3", 0.5], ["4", 1.0]], 1.5, 60).plain
    assert marks.index("│step 3") == int(0.5 / 1.5 * 59)
    assert marks.startswith("│step 2") and marks.endswith("│step 4")
    crowded = step_marks([["1", 0.0], ["2", 0.1]], 1.0, 30).plain  # cells 0 and 2
    assert crowded.startswith("│ │step 2") and "step 1" not in crowded
