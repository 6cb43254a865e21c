"""``?``: every key, and what the numbers mean."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.dialog import Dialog
from torchscan_tui.ui.widgets.rss_panel import RSS_EXPLANATION


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen > #help-dialog {
        width: 90%;
        max-width: 110;
        height: 80%;
    }
    """

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, keys: list[tuple[str, str]]):
        """``keys``: each key and what it does, from the screen's bindings (see
        RowsScreen.help_rows)."""
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style=f"bold {palette_of(self.app).accent}", no_wrap=True)
        table.add_column()
        for key, meaning in self.keys:  # Text: "[memory]" in a meaning is not markup
            table.add_row(Text(key), Text(meaning))
        with VerticalScroll(id="help-dialog", classes="dialog-box"):
            yield Static(Text("Keys", style="bold"))
            yield Static(table)
            yield Static(Text("\nPeak RSS", style="bold"))
            yield Static(RSS_EXPLANATION)
            yield Static(Text("\nSelf times", style="bold"))
            yield Static(
                "CPU and device self time exclude time spent in child ops. They may overlap "
                "and are never summed into latency. Device time shows — where it was not "
                "measured. Net bytes are allocations minus frees and can be negative."
            )
