"""The one dialog: a screen over the app whose box is centred, whatever the terminal's
width (the step overview and the rank picker once sat at its left edge).

Export, help, chart, step overview and rank picker are each a :class:`Dialog`; their box
is the container with the ``dialog-box`` class, sized by the screen's own CSS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from torchscan_tui.ui.literal import literal

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    DEFAULT_CSS = """
    Dialog {
        align: center middle;
    }
    Dialog > .dialog-box {
        width: 95%;
        max-width: 140;
        height: 85%;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    """


class DrawnDialog(Dialog[None]):
    """A dialog that shows a title and one drawing made to its width, drawn again when
    the terminal is resized: the step overview (o) and the memory view (M)."""

    def __init__(self, title: str | Sequence[str]) -> None:
        """``title``: its line, or its lines (each shown literally: a line break inside
        one is shown as ``\\x0a``, as any control character of outside text is)."""
        super().__init__()
        self.title_lines = (title,) if isinstance(title, str) else tuple(title)

    def compose(self) -> ComposeResult:
        title = Text("\n").join(literal(line, "bold") for line in self.title_lines)
        with VerticalScroll(id="chart-dialog", classes="dialog-box"):
            yield Static(title, id="chart-title")
            yield Static(id="chart-body")

    def on_mount(self) -> None:
        self._redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._redraw()

    def _redraw(self) -> None:
        # The vertical scrollbar's cells kept free: a drawing taller than the dialog gets
        # one, and a line drawn to the whole width then wrapped under it.
        box = self.query_one("#chart-dialog")
        width = max(box.content_size.width - box.styles.scrollbar_size_vertical, 40)
        self.query_one("#chart-body", Static).update(self.draw(width))

    def draw(self, width: int) -> RenderableType:
        """The body, ``width`` cells wide."""
        raise NotImplementedError
