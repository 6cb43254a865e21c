"""Ask where to export: a path, what will be written, and a confirmation to overwrite.

The dialog dismisses with an :class:`ExportRequest` or None. It checks the destination
before dismissing (a directory, a missing parent), and an existing file needs Enter a
second time, so nothing is clobbered without being asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from torchscan_tui.formats.atomic import DestinationExists, ExportError, check_destination
from torchscan_tui.ui.literal import NO_CONTROLS, literal
from torchscan_tui.ui.screens.dialog import Dialog


@dataclass(frozen=True)
class ExportRequest:
    path: str
    overwrite: bool


class ExportDialog(Dialog[ExportRequest | None]):
    DEFAULT_CSS = """
    ExportDialog > #export-dialog {
        width: 80%;
        max-width: 100;
        height: auto;
    }
    #export-title {
        text-style: bold;
        margin-bottom: 1;
    }
    .export-note {
        color: $text-muted;
    }
    #export-path {
        margin-top: 1;
    }
    #export-message.warning {
        color: $warning;
    }
    #export-buttons {
        height: auto;
        align-horizontal: right;
    }
    #export-buttons Button {
        margin-left: 1;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        default_path: str,
        notes: list[str],
        *,
        validate=None,
        verb: str = "Export",
    ):
        super().__init__()
        self.dialog_title = title
        self.verb = verb
        self.default_path = default_path
        self.notes = notes
        self.validate_path = validate
        self._confirmed_for: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog", classes="dialog-box"):
            yield Label(self.dialog_title, id="export-title")
            for note in self.notes:
                yield Static(literal(note), classes="export-note")
            yield Input(value=self.default_path, id="export-path", restrict=NO_CONTROLS)
            yield Label("", id="export-message")
            with Horizontal(id="export-buttons"):
                yield Button(self.verb, variant="primary", id="export-ok")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def _say(self, message: str, warning: bool = True) -> None:
        label = self.query_one("#export-message", Label)
        label.update(literal(message))
        label.set_class(warning, "warning")

    @on(Input.Changed, "#export-path")
    def _path_edited(self) -> None:
        self._confirmed_for = None
        self._say("", warning=False)

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export-ok")
    def submit(self) -> None:
        path = self.query_one("#export-path", Input).value.strip()
        if not path:
            self._say("Give a file name.")
            return
        path = str(Path(path).expanduser())
        try:
            if self.validate_path is not None:
                self.validate_path(path)
            check_destination(path)
        except DestinationExists:
            if self._confirmed_for == path:
                self.dismiss(ExportRequest(path, overwrite=True))
                return
            self._confirmed_for = path
            self._say(f"{path} exists. Press Enter again to overwrite it, or change the name.")
            return
        except ExportError as exc:
            self._say(str(exc))
            return
        self.dismiss(ExportRequest(path, overwrite=False))

    @on(Button.Pressed, "#export-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
