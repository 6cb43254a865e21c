"""Issue 20, 10 and 16: share and time per call as columns, columns that adapt by priority
(the operator and the sorted column always show; a CPU run's empty device column gives
its width to the names), and a footer of whole keys, the most used first."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay import make_row, replay_source, sample_rows

from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.key_footer import KEY_PRIORITY
from torchscan_tui.ui.widgets.run_header import RunHeader

LONG = "aten::_native_multi_head_attention"  # 34 characters
DATA = Path(__file__).parent.parent / "data"


def header_line(app) -> str:
    return str(app.main_screen.table.render_line(0).text)


def line(app, y: int) -> str:
    return str(app.main_screen.table.render_line(y).text)


def footer_keys(app) -> list[str]:
    return [key.action for key in app.main_screen.query("FooterKey")
            if not key.has_class("-command-palette")]  # fmt: skip


async def run(app, pilot, wait):
    await wait(pilot)
    await pilot.pause()


async def test_share_and_time_per_call_are_columns_and_follow_the_sorted_field(wait):
    app = create_app(source=replay_source(rows=sample_rows(with_device=True)), show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await run(app, pilot, wait)
        title = header_line(app)
        assert "CPU %" in title and "CPU/call" in title
        first = line(app, 1)  # aten::addmm: 12 calls, 4.2 ms of 13.2 ms
        assert "31.8%" in first and "350.0 µs" in first
        await pilot.press("g")  # by device time: the share and per call follow it
        title = header_line(app)
        assert "dev %" in title and "dev/call" in title
        assert "Σ device self" in str(app.query_one(RunHeader).render())


async def test_at_80_columns_a_cpu_run_gives_the_device_column_to_the_names(wait):
    rows = [make_row(LONG, [[8, 64, 128]], 6, 0.002), make_row("aten::mm", [[8, 8]], 2, 0.001)]
    app = create_app(source=replay_source(rows=rows), show_clock=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await run(app, pilot, wait)
        title = header_line(app)
        assert "device" not in title and "CPU self" in title
        widths = {column.key: width for column, width in app.main_screen.table.column_layout()}
        assert widths["operator"] >= 24  # was 14 before the device column gave way
        await pilot.press("m")  # the sorted column always shows, narrow or not
        assert "bytes ↓" in header_line(app)
        await pilot.press("n")
        assert "calls ↓" in header_line(app)
        assert "g" not in [key.key for key in app.main_screen.query("FooterKey")]
        await pilot.press("g")  # hidden from the footer, and says why
        await pilot.pause()
        assert any("No device time" in n.message for n in app._notifications)


@pytest.mark.slow
@pytest.mark.parametrize("width", [60, 80, 120, 200])
async def test_the_footer_shows_whole_keys_the_most_used_first(wait, width):
    app = create_app(source=replay_source(rows=sample_rows(with_device=True)), show_clock=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await run(app, pilot, wait)
        keys = list(app.main_screen.query("FooterKey"))
        assert keys, "no footer keys"
        right = max(key.region.right for key in keys if not key.has_class("-command-palette"))
        palette = [key for key in keys if key.has_class("-command-palette")]
        assert right <= palette[0].region.x  # no key runs under the palette key
        for key in keys:  # each key whole: its label fits its region
            assert key.region.width >= len(key.key_display), key.description
        actions = footer_keys(app)
        ranked = [a for a in actions if a in KEY_PRIORITY]
        assert ranked == sorted(ranked, key=KEY_PRIORITY.index)
        assert actions[:2] == ["focus_filter", "help"]


async def test_the_footer_follows_a_resize(wait):
    app = create_app(source=replay_source(rows=sample_rows(with_device=True)), show_clock=False)
    async with app.run_test(size=(200, 24)) as pilot:
        await run(app, pilot, wait)
        wide = len(footer_keys(app))
        await pilot.resize_terminal(60, 24)
        await pilot.pause(0.1)
        await pilot.pause()
        narrow = len(footer_keys(app))
        assert 2 <= narrow < wide


async def test_a_wide_terminal_gives_the_shapes_what_the_names_do_not_need(wait):
    """At 200 columns the operator column took 61 cells for names of at most 34: the
    shapes, cut at 74, now get the rest."""
    rows = [make_row(LONG, [[8, 64, 128]] * 12, 6, 0.002), make_row("aten::mm", [[8]], 2, 0.001)]
    app = create_app(source=replay_source(rows=rows), show_clock=False)
    async with app.run_test(size=(200, 24)) as pilot:
        await run(app, pilot, wait)
        widths = {column.key: width for column, width in app.main_screen.table.column_layout()}
        assert widths["operator"] == len(LONG)
        assert widths["shapes"] >= 2 * widths["operator"]
        assert "[[8, 64, 128], [8, 64, 128]" in line(app, 1)


@pytest.mark.parametrize("size", [(80, 24), (160, 40)])
async def test_the_sampled_rss_curve_keeps_its_line_under_figures_that_wrap(wait, size):
    """The figures' line said "below: RSS sampled from /proc" and, wrapped (a live run's
    steps line; any run at 80 columns), filled the panel's height: the curve it named
    was cut off. Now the curve has its line whatever the figures take, and says itself
    what it is."""
    steps = {"steps": 3, "median_seconds": 0.004559, "min_seconds": 0.003847,
             "max_seconds": 0.005272, "startup_seconds": 2.4,
             "torch_import_seconds": 1.3}  # fmt: skip
    app = create_app(source=replay_source(run={"unprofiled_steps": steps}), show_clock=False)
    async with app.run_test(size=size) as pilot:
        await run(app, pilot, wait)
        panel = app.main_screen.query_one("#rss-panel")
        curve = app.main_screen.query_one("#rss-sparkline")
        figures = app.main_screen.query_one("#rss-figures")
        assert figures.region.height >= 2  # the steps line wraps at both widths
        assert curve.display and curve.region.height == 1 and curve.region.width > 10
        assert panel.content_region.contains_region(curve.region)
        assert curve.region.y >= figures.region.bottom
        span = str(app.main_screen.query_one("#rss-span").render())
        assert "sampled from /proc (approximate)" in span
        assert "below" not in str(figures.render())


async def test_at_80_columns_the_header_says_where_the_run_is_before_the_device(until):
    """A GPU trace's device words (~60 characters) came before the phase, and an
    80-column header ended at "device cuda, 66.203 ms device time (100.0%": no "done",
    no failure, no spinner."""
    report, source = open_profile(DATA / "alexnet_cuda.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(80, 24)) as pilot:
        header = app.query_one(RunHeader)
        await until(pilot, lambda: header.heading.phase == "done")
        assert "attributed to operators" in header.heading.device
        await until(pilot, lambda: "device cuda" in header.render_line(0).text)
        assert "alexnet_cuda.json.gz  done" in header.render_line(0).text


async def test_at_80_columns_the_filters_hint_shows_whole(wait):
    """The hint was 82 characters: at 80 columns its last term, ``kind:runtime``, was
    cut off, and with it the only sign that a filter can pick rows by kind."""
    app = create_app(source=replay_source(rows=sample_rows()), show_clock=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await run(app, pilot, wait)
        box = app.main_screen.query_one("#filter-input")
        assert str(box.render_line(0).text).rstrip().endswith("* any dim; kind:runtime")
