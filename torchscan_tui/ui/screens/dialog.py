"""The one dialog: a screen over the app whose box is centred, whatever the terminal's
width (the step overview and the rank picker once sat at its left edge).

Export, help, chart, step overview and rank picker are each a :class:`Dialog`; their box
is the container with the ``dialog-box`` class, sized by the screen's own CSS.
"""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

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
