"""The filter box and, beside it, what is wrong with the filter when something is."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.geometry import Size
from textual.reactive import Reactive
from textual.timer import Timer
from textual.widgets import Input, Label

from torchscan_tui.analysis.filtering import MAX_FILTER_CHARS
from torchscan_tui.ui.literal import NO_CONTROLS, literal

PLACEHOLDER = "/ filter: words match names; [8, 64] or 8x64 shapes; * any dim; kind:runtime"
# A filter being typed is unfinished most of the time ("[4, *" before the "]"): its error
# waits for a pause in the typing, as an editor's squiggles do, instead of flashing up
# and going at every key. Showing or hiding it resizes the box (a screen layout).
ERROR_DELAY_S = 0.6


class FilterInput(Input):
    """The filter box. Textual's Input sets its virtual size (its text's width) at every
    key, and that size asks for a layout of the whole screen: ~7 ms a key over the
    table, the header and the panes, for a box whose own size never changes (one line,
    a fixed share of the width). Here the new size is only repainted: scrolling the
    text within the box reads the same value."""

    virtual_size = Reactive(Size(0, 0), layout=False)


class FilterBar(Horizontal):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._pending: Timer | None = None
        self._error = ""

    def compose(self) -> ComposeResult:
        yield FilterInput(
            placeholder=PLACEHOLDER,
            id="filter-input",
            restrict=NO_CONTROLS,
            max_length=MAX_FILTER_CHARS,
        )  # a paste past it is cut: see filtering
        yield Label("", id="filter-error")

    @property
    def error(self) -> str:
        """The error on show ("" for none)."""
        return self._error

    def report_error(self, message: str) -> None:
        """Say what is wrong with the filter once the typing pauses; "" clears it now."""
        if self._pending is not None:
            self._pending.stop()
            self._pending = None
        if message and message != self.error:
            self._pending = self.set_timer(ERROR_DELAY_S, lambda: self.show_error(message))
        elif not message:
            self.show_error("")

    def show_error(self, message: str) -> None:
        """Show ``message`` now ("" hides the error)."""
        label = self.query_one("#filter-error", Label)
        if self._error == message:
            return  # typing through an unfinished term keeps the same message: no relayout
        self._error = message
        label.update(literal(message))  # it quotes what was typed: never markup
        label.set_class(bool(message), "visible")
