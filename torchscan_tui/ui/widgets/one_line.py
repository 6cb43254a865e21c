"""A one-line text widget that repaints only when its text changes, never relayouting."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class OneLine(Static):
    """Static text on one line of fixed size (the header, the status line).

    Its text never changes its size, so an update skips the whole-screen layout that
    ``Static.update`` asks for by default (~15 ms at 100k rows, on every keystroke), and
    an unchanged text is not repainted at all.
    """

    _shown: Text | None = None

    def show_text(self, text: Text) -> None:
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)
