"""``b``: a bar chart over the rows shown, with keys to switch what it measures.

The screen is given the fields it may chart (key → label and field) and a function that
draws one of them at a width; it redraws on resize and on each key. The apps decide what
is drawn (shares of self time, or compare deltas); this screen only hosts it.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from torchscan_tui.ui.screens.dialog import Dialog

Draw = Callable[[str, int], RenderableType]
CHART_KEYS = ("c", "d", "g")  # the apps' own sort keys for the same figures


class ChartScreen(Dialog[None]):
    BINDINGS = [
        Binding("escape,q,b", "dismiss", "Close"),
        *(Binding(key, f"show('{key}')", key, show=False) for key in CHART_KEYS),
    ]

    def __init__(self, title: str, fields: dict[str, tuple[str, str]], draw: Draw, start: str):
        super().__init__()
        self.title_text = title
        self.fields = fields  # key -> (label, field name)
        self.draw = draw
        self.field_key = start

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="chart-dialog", classes="dialog-box"):
            yield Static(id="chart-title")
            yield Static(id="chart-body")

    def on_mount(self) -> None:
        self._redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "show" or (bool(parameters) and parameters[0] in self.fields)

    def action_show(self, key: str) -> None:
        self.field_key = key
        self._redraw()

    def _redraw(self) -> None:
        label, field_name = self.fields[self.field_key]
        title = Text(f"{self.title_text}: {label}", style="bold")
        keys = "  ".join(f"{key} {name}" for key, (name, _) in self.fields.items())
        title.append(f"    ({keys}; escape closes)", style="dim")
        self.query_one("#chart-title", Static).update(title)
        width = max(self.query_one("#chart-dialog").content_size.width, 40)
        self.query_one("#chart-body", Static).update(self.draw(field_name, width))
