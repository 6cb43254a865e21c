"""``?``: every key, and what the numbers mean."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from torchscan_tui.ui.widgets.rss_panel import RSS_EXPLANATION

KEYS = [
    ("/", "focus the filter (escape leaves it); words, [8, 64], 8x64, [*, 64], kind:runtime"),
    ("c / g / n / m", "sort by CPU self / device self / calls / net bytes; again flips"),
    ("s", "back to the report's rank order"),
    ("↑ ↓ j, pgup pgdn, home end", "move (k opens the kernel view)"),
    ("enter", "show or hide the detail pane for the highlighted row"),
    ("space / a / A", "select the row / all visible rows (again: none) / clear the selection"),
    ("b", "bar chart: each operator's share of the shown rows' self time (c / g switch)"),
    ("k", "kernel view: device work by kernel and launching op; / t n a x e inside"),
    ("e", "export the selected rows (or the highlighted one): .csv, .json or .md"),
    ("t", "export the Chrome trace (Perfetto, chrome://tracing)"),
    ("w", "save the session as a report: torchscan-tui report.json reopens it"),
    ("l", "show or hide the workload's output"),
    ("r / x", "run the workload again / cancel the run"),
    ("q, F10", "quit (cancels a run; leaves no process behind)"),
    ("?, F1", "this help"),
    ("ctrl+p", "command palette: every action by name"),
    ("mouse", "click a row to highlight it, double-click to open it, click a title to sort"),
]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, keys: list[tuple[str, str]] | None = None):
        super().__init__()
        self.keys = keys if keys is not None else KEYS

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, meaning in self.keys:
            table.add_row(key, meaning)
        with VerticalScroll(id="help-dialog"):
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

    def action_dismiss(self) -> None:
        self.dismiss(None)
