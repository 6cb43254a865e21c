"""The filter box and, beside it, what is wrong with the filter when something is."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label

PLACEHOLDER = "/ filter: words match names; [8, 64] or 8x64 match shapes; * any dim; kind:runtime"


class FilterBar(Horizontal):
    def compose(self) -> ComposeResult:
        yield Input(placeholder=PLACEHOLDER, id="filter-input")
        yield Label("", id="filter-error")

    def show_error(self, message: str) -> None:
        label = self.query_one("#filter-error", Label)
        if str(label.content) == message:
            return  # typing through an unfinished term keeps the same message: no relayout
        label.update(message)
        label.set_class(bool(message), "visible")
