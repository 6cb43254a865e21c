"""Issue 30 (the part built): M, the allocator over the window in the app."""

from __future__ import annotations

from replay import replay_source

from torchscan_tui.analysis.memory_timeline import Allocation, StepSpan, memory_block
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.memory_screen import MemoryScreen, curve_text

from .conftest import wait_for_run
from .test_overview_screen import screen_text


def _block():
    records = [
        Allocation(10, 1, 512, 512, "cpu", "aten::ones", [[], []]),
        Allocation(20, 2, 4_000_000, 4_000_512, "cpu", "aten::ones", [[], []]),
        Allocation(30, 2, -4_000_000, 512, "cpu", None, []),
    ]
    return memory_block(records, [StepSpan("3", 0, 15), StepSpan("4", 16, 40)], 0)


async def test_m_shows_the_curve_the_peak_and_what_it_held(until):
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
