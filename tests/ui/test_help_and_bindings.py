"""Help is made from the bindings: every key a screen binds is in its help, and the
table's messages come in the order a user's keys make them."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from replay import replay_source, sample_rows
from textual.app import App, ComposeResult
from textual.binding import Binding

from torchscan_tui.analysis.compare import compare_reports
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.help_screen import HelpScreen
from torchscan_tui.ui.screens.kernel_screen import KernelScreen
from torchscan_tui.ui.widgets.operator_table import OperatorTable

from .conftest import wait_for_run

DATA = Path(__file__).resolve().parents[1] / "data"


def help_text(app) -> str:
    """What the help screen shows, as text (from the screen's SVG export)."""
    assert isinstance(app.screen, HelpScreen)
    svg = app.export_screenshot()
    lines = re.findall(r"<text [^>]*>(.*?)</text>", svg)
    return html.unescape("".join(lines)).replace("\xa0", " ")


def _profile_app():
    return create_app(source=replay_source(), show_clock=False)


def _compare_app():
    rows = replay_source().events[-1].report["operators"]
    report = {"operators": rows}
    return create_app(diff=compare_reports(report, report, "a.json", "b.json"))


@pytest.mark.parametrize("make_app", [_profile_app, _compare_app], ids=["profile", "compare"])
@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_every_binding_of_a_screen_is_in_its_help(make_app):
    app = make_app()
    async with app.run_test(size=(200, 80)) as pilot:
        if app.main_screen.__class__.__name__ == "ProfileScreen":
            await wait_for_run(pilot)
        screen = app.main_screen
        bindings = [binding for binding in screen.BINDINGS if isinstance(binding, Binding)]
        assert len(bindings) >= 10
        await pilot.press("question_mark")
        text = help_text(app)
        for binding in bindings:
            assert screen.key_names(binding) in text, binding
            assert (binding.tooltip or binding.description) in text, binding


class TableHost(App):
    """The table alone, recording every message it posts (as Textual's own table tests
    record theirs)."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.view = RowView(rows)
        self.messages: list[tuple] = []

    def compose(self) -> ComposeResult:
        yield OperatorTable(self.view)

    def on_mount(self) -> None:
        self.query_one(OperatorTable).focus()

    def on_operator_table_highlighted(self, message: OperatorTable.Highlighted) -> None:
        self.messages.append(("Highlighted", message.position, _name(message.row)))

    def on_operator_table_activated(self, message: OperatorTable.Activated) -> None:
        self.messages.append(("Activated", _name(message.row)))

    def on_operator_table_sort_requested(self, message: OperatorTable.SortRequested) -> None:
        self.messages.append(("SortRequested", message.key))


def _name(row: dict | None) -> str | None:
    return None if row is None else row["operator"]


async def test_the_tables_messages_come_in_the_order_of_the_keys():
    """Down, down, enter, up, end: each move one highlight naming its row and position,
    enter one activation of the row under the cursor, nothing more and nothing twice."""
    rows = sample_rows()
    app = TableHost(rows)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        app.messages.clear()  # the first highlight, as the table mounts
        await pilot.press("down", "down", "enter", "up", "end")
        await pilot.pause()
    last = len(rows) - 1
    assert app.messages == [
        ("Highlighted", 1, rows[1]["operator"]),
        ("Highlighted", 2, rows[2]["operator"]),
        ("Activated", rows[2]["operator"]),
        ("Highlighted", 1, rows[1]["operator"]),
        ("Highlighted", last, rows[last]["operator"]),
    ]


@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_the_compare_screen_and_the_kernel_view_list_their_actions_in_the_palette():
    """Issue 17: the compare screen had no palette entries; now every screen's bindings
    are listed, once each, with their keys."""
    app = _compare_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for name in ("Filter", "Delta", "Ratio", "Calls", "Select", "Chart", "Export", "Help"):
            assert sum(title.startswith(f"{name}: ") for title in titles) == 1, name
    report, source = open_profile(DATA / "alexnet_cuda.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for_run(pilot)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, KernelScreen)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for name in ("Back", "Filter", "Total", "Mean", "Export"):
            assert any(title.startswith(f"{name}: ") for title in titles), name
        assert not any(title.startswith("CPU: ") for title in titles)  # not this screen's


@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_the_palette_shows_brackets_in_an_actions_text_literally():
    """The noise key's text names ``[memory]`` rows: the palette must not read it as markup."""
    app = _compare_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"noise")
        options = app.screen.query_one("CommandList")
        for _ in range(40):  # the palette searches in a worker
            await pilot.pause(0.05)
            if options.option_count:
                break
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any("[memory] rows" in prompt for prompt in prompts), prompts
