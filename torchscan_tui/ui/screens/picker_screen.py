"""Pick one trace from a ``tensorboard_trace_handler`` directory (newest first)."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

from torchscan_tui.common.formatting import format_bytes
from torchscan_tui.ui.literal import literal


def describe(path: Path) -> str:
    stat = path.stat()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stat.st_mtime))
    return f"{path.name}  ·  {when}  ·  {format_bytes(stat.st_size)}"


class PickerScreen(Screen[None]):
    """Ends the app with the chosen path as its result, or None when the user quits."""

    BINDINGS = [Binding("escape,q", "quit_picker", "Quit", tooltip="Open nothing")]

    def __init__(self, folder: Path, traces: list[Path]):
        super().__init__()
        self.folder = folder
        self.traces = traces

    def compose(self) -> ComposeResult:
        yield Label(
            literal(f" {len(self.traces)} traces in {self.folder}: pick one (enter)"),
            id="run-header",
        )
        yield OptionList(
            *(Option(literal(describe(p)), id=str(i)) for i, p in enumerate(self.traces))
        )
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.app.exit(self.traces[int(event.option.id or 0)])

    def action_quit_picker(self) -> None:
        self.app.exit(None)
