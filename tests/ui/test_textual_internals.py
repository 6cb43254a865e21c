"""What the footer and the table take from Textual beyond its documented API.

``pyproject.toml`` bounds textual below the next major version. These tests fail loudly,
naming what moved, when an upgrade changes one of the internals we rely on: the footer's
recompose on a bindings change (KeyFooter coalesces them), the scroll view's size
reactives (OperatorTable resizes without a screen layout), the scrollbar it makes and
draws as strips, and the app's default screen (one App, a screen per mode).
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from textual.app import App
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.widget import Widget
from textual.widgets import Footer, Input

from torchscan_tui.ui.widgets.filter_bar import FilterInput
from torchscan_tui.ui.widgets.key_footer import KeyFooter

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_installed_textual_is_within_the_bounds_we_tested():
    bounds = re.search(r'"textual>=([\d.]+),<([\d.]+)"', PYPROJECT.read_text())
    assert bounds, "pyproject.toml must bound textual above and below"
    low, high = (tuple(int(p) for p in bound.split(".")) for bound in bounds.groups())
    installed = tuple(int(p) for p in version("textual").split(".")[:3])
    assert low <= installed[: len(low)] and installed[: len(high)] < high, installed


def test_the_footer_still_recomposes_on_a_bindings_change_as_key_footer_expects():
    """KeyFooter.bindings_changed lets one recompose wait at a time; it mirrors the
    conditions under which Textual's footer schedules one."""
    assert "bindings_changed" in vars(Footer), "Footer.bindings_changed is gone"
    assert list(inspect.signature(Footer.bindings_changed).parameters) == ["self", "screen"]
    source = inspect.getsource(Footer.bindings_changed)
    for condition in ("app_focus", "is_attached", "screen is self.screen", "recompose"):
        assert condition in source, f"Footer.bindings_changed no longer uses {condition!r}"
    assert "recompose" in vars(KeyFooter) and "bindings_changed" in vars(KeyFooter)


def test_the_scroll_view_still_has_the_reactives_the_table_sets():
    assert isinstance(vars(ScrollView).get("virtual_size") or ScrollView.virtual_size, Reactive)
    assert isinstance(ScrollBar.window_virtual_size, Reactive)
    for name in ("container_size", "show_vertical_scrollbar", "vertical_scrollbar", "set_reactive"):
        assert hasattr(ScrollView, name), f"ScrollView.{name} is gone"


def test_an_app_still_opens_on_the_screen_get_default_screen_gives():
    assert "get_default_screen" in vars(App), "App.get_default_screen is gone"


def test_the_input_still_sizes_its_text_through_virtual_size_as_filter_input_expects():
    """FilterInput keeps the virtual size from asking for a screen layout at every key;
    Input must still set its text's width through that reactive."""
    assert isinstance(vars(Widget)["virtual_size"], Reactive)
    assert "self.virtual_size" in inspect.getsource(Input._watch_value)
    assert vars(FilterInput)["virtual_size"]._layout is False


@pytest.mark.slow  # over a second: the fast subset stays under a minute
async def test_a_filter_longer_than_its_box_still_scrolls_to_the_cursor():
    class Box(App):
        def compose(self):
            yield FilterInput(id="box")

    text = "".join(f"w{i:03}" for i in range(15))  # 60 characters, a box of 28
    async with Box().run_test(size=(30, 5)) as pilot:
        box = pilot.app.query_one(FilterInput)
        box.focus()
        await pilot.press(*text)
        await pilot.pause()
        assert box.virtual_size.width == len(text) + 1
        assert box.render_line(0).text.rstrip().endswith("w013w014")


def test_the_scrollbar_is_still_made_as_the_tables_own_is():
    """OperatorTable.vertical_scrollbar makes a StripScrollBar as Widget makes its
    ScrollBar (the same attribute, started the same way), and the strip bar asks
    ScrollBarRender.render_bar for the bar's cells."""
    source = inspect.getsource(Widget.vertical_scrollbar.fget)
    for used in ("self._vertical_scrollbar", "self.app._start_widget(self", ".display = False"):
        assert used in source, f"Widget.vertical_scrollbar no longer uses {used!r}"
    parameters = inspect.signature(ScrollBarRender.render_bar).parameters
    for name in ("size", "virtual_size", "window_size", "position", "thickness", "vertical",
                 "back_color", "bar_color"):  # fmt: skip
        assert name in parameters, f"ScrollBarRender.render_bar has no {name!r}"
