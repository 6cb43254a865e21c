"""Issue 29 (the part built): L, CPU self time by source line, on a real trace recorded
with stacks; the detail pane's call sites; enter says why it cannot open an editor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.text import Text
from textual import events
from textual.app import App
from textual.widgets import DataTable

from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.by_line_screen import ByLineScreen, shown_site
from torchscan_tui.ui.widgets.detail_pane import DetailPane
from torchscan_tui.ui.widgets.fitted_data_table import FittedDataTable

DATA = Path(__file__).parent.parent / "data"


def _first_cells(table: DataTable) -> list[str]:
    cells = table.get_row_at(0)
    return [cell.plain if isinstance(cell, Text) else str(cell) for cell in cells]


@pytest.mark.slow  # a 75k-event trace
async def test_l_shows_the_source_lines_and_enter_says_why_no_editor_opens(until, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    report, source = open_profile(DATA / "resnet50_2021_cuda.pt.trace.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await until(pilot, lambda: bool(app.main_screen.view.rows))
        await pilot.press("slash", *"cudnn_convolution -backward", "enter", "enter")
        await until(pilot, lambda: app.query_one(DetailPane).display)
        detail = str(app.query_one("#detail-body").render())
        assert "called from" in detail and "resnet50_profiler_api.py(46): <module>" in detail
        await pilot.press("escape", "slash", "ctrl+u", "enter")  # every row again
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ByLineScreen))
        table = app.screen.query_one(DataTable)
        first = _first_cells(table)
        assert first[0] == "resnet50_profiler_api.py(42): <module>"  # the data loading
        assert "DataLoader" in first[4]
        assert first[3] != "—"  # a CUDA trace: its device time by the same shares
        await pilot.press("enter")
        await pilot.pause()
        assert "No editor: set $VISUAL or $EDITOR" in str(
            app.screen.query_one("#by-line-status").render()
        )
        await pilot.press("escape")
        assert app.screen is app.main_screen


async def test_l_on_a_profile_without_stacks_says_how_to_record_them(until):
    report, source = open_profile(DATA / "alexnet_cuda.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await until(pilot, lambda: bool(app.main_screen.view.rows))
        assert app.main_screen.check_action("by_line", ()) is False
        await pilot.press("L")
        await pilot.pause()
        assert not isinstance(app.screen, ByLineScreen)
        assert any("with_stack=True" in str(n.message) for n in app._notifications)


def _row(operator: str, site: str, seconds: float) -> dict:
    return {"operator": operator, "input_shapes": [], "cpu_self_seconds": seconds,
            "device_self_seconds": None,
            "sites": [{"site": site, "cpu_self_seconds": seconds, "share": 1.0}]}  # fmt: skip


def _hosting(rows: list[dict]) -> App:
    """A bare app showing the by-line view of ``rows`` (each row's share of their sum)."""
    total = sum(row["cpu_self_seconds"] for row in rows)

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(ByLineScreen(rows, total, []))

    return Host()


@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_l_filters_its_lines_by_words_and_escape_goes_back_then_out():
    """Issue 29, point 3: the by-line view filters its own lines (file, function or
    operators; every word), as well as showing the rows the profile's filter shows."""
    app = _hosting([_row("aten::mm", "/p/model.py(12): forward", 0.3),
                    _row("aten::softmax", "/p/attention.py(40): forward", 0.2),
                    _row("aten::add_", "/p/train.py(7): <module>", 0.1)])  # fmt: skip
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ByLineScreen) and len(screen.lines) == 3
        await pilot.press("slash", *"forward", "space", *"softmax")
        await pilot.pause()
        assert [line["site"] for line in screen.lines] == ["/p/attention.py(40): forward"]
        assert screen.query_one(DataTable).row_count == 1
        await pilot.press("escape")  # out of the box, still in the view
        await pilot.pause()
        assert app.screen is screen and isinstance(screen.focused, DataTable)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen


async def test_keys_typed_in_one_burst_after_slash_are_the_line_filters_text():
    """As the profile's filter (issue 20, bug 4): '/gc' sent at once (a paste, tmux
    send-keys) is the filter's text, not g (sort by device) and c (sort by CPU)."""
    app = _hosting([_row("aten::mm", "/p/gc.py(12): forward", 0.3),
                    _row("aten::add_", "/p/train.py(7): <module>", 0.1)])  # fmt: skip
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ByLineScreen)
        for key, character in [("slash", "/"), ("g", "g"), ("c", "c")]:
            app.post_message(events.Key(key, character))
        await pilot.pause()
        await pilot.pause()
        assert screen.words == "gc" and screen.by_device is False
        assert [line["site"] for line in screen.lines] == ["/p/gc.py(12): forward"]
        await pilot.press("slash")  # typed in the box, "/" is a character
        assert screen.words == "gc/"


def test_a_line_shows_its_file_relative_to_the_folder_it_is_in_and_keeps_its_end():
    """A live run's stacks name files by absolute path: the cell cut the path on the
    right and lost the line's function (``…/convnet_train.py(28): w…``)."""
    site = "/work/main/sample_workloads/convnet_train.py(28): workload"
    assert shown_site(site, ["/work/main"]) == "sample_workloads/convnet_train.py(28): workload"
    assert shown_site(site, ["/elsewhere", "/work/main/sample_workloads"]) == (
        "convnet_train.py(28): workload"
    )
    assert shown_site(site, ["/work/mai"], width=80) == site  # a prefix of the text is no folder
    deep = "/srv/jobs/2026/run-17/code/src/model/blocks/attention.py(140): forward"
    shown = shown_site(deep, [], width=40)
    assert len(shown) == 40 and shown.startswith("…")
    assert shown.endswith("model/blocks/attention.py(140): forward")
    assert shown_site("(other sites)", ["/work"]) == "(other sites)"
    assert shown_site("train.py(7): <module>", ["/work"]) == "train.py(7): <module>"


async def test_the_table_shows_the_short_site_and_the_filter_still_reads_the_whole_path():
    app = _hosting([_row("aten::mm", f"{os.getcwd()}/deep/folder/model.py(12): forward", 0.3),
                    _row("aten::add_", "/p/train.py(7): <module>", 0.1)])  # fmt: skip
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ByLineScreen)
        screen.roots = [os.getcwd()]
        screen._fill()
        assert _first_cells(screen.query_one(DataTable))[0] == "deep/folder/model.py(12): forward"
        await pilot.press("slash", *"folder")
        await pilot.pause()
        assert len(screen.lines) == 1


async def test_the_line_columns_fit_a_narrow_terminal_and_the_site_keeps_its_end():
    """The by-line columns' fixed widths summed to ~150 cells: at 80 columns the CPU
    self time was off screen. Now the operators, then the share, give way, a CPU
    profile's column of dashes gives its width to the others, and the site is cut to
    its cell from the left."""
    site = "/srv/jobs/run-17/code/src/model/blocks/attention.py(140): forward"
    app = _hosting([_row("aten::mm", site, 0.3), _row("aten::add_", "/p/train.py(7): x", 0.1)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(FittedDataTable)
        assert "device" not in table.shown_keys()  # no line has device time
        assert table.shown_keys()[:2] == ["site", "cpu"]
        assert table.virtual_size.width <= table.size.width
        first = _first_cells(table)
        assert first[0].startswith("…") and first[0].endswith("attention.py(140): forward")
        assert first[1] == "300.000 ms"
        await pilot.resize_terminal(200, 24)
        await pilot.pause()
        assert table.shown_keys() == ["site", "cpu", "share", "operators"]
        assert _first_cells(table)[0] == site  # room for all of it now
