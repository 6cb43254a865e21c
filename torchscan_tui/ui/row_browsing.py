"""Filtering and selecting rows: the keys the main app and the compare app share.

A mixin for an App that has ``self.view`` (a RowView), ``self.table`` (an OperatorTable or
subclass), a FilterBar holding ``#filter-input``, and a ``_render_status()`` method.
"""

from __future__ import annotations

from textual.widgets import Input

from ..rows import FilterError
from .widgets.filter_bar import FilterBar

FILTER_INPUT = "filter-input"


class RowBrowsing:
    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as the user types; a bad filter says so in place and hides nothing."""
        if event.input.id != FILTER_INPUT:
            return
        bar = self.query_one(FilterBar)
        shown = self.view.visible
        try:
            changed = self.view.set_filter(event.value)
            bar.show_error("")
        except FilterError as exc:
            changed = self.view.visible != shown
            bar.show_error(f"{exc} (showing all rows)")
        if changed:
            self.table.view_changed()
        self._render_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == FILTER_INPUT:
            self.table.focus()

    def action_focus_filter(self) -> None:
        self.query_one(f"#{FILTER_INPUT}", Input).focus()

    def action_toggle_select(self) -> None:
        self.view.toggle_selected(self.table.cursor)
        self.table.refresh()
        self._render_status()

    def action_select_all(self) -> None:
        self.view.select_all_visible()
        self.table.refresh()
        self._render_status()
