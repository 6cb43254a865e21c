"""Filtering, selecting and sorting rows: the keys the main app and the compare app share.

A mixin for an App that has ``self.view`` (a RowView), ``self.table`` (an OperatorTable or
subclass), a FilterBar holding ``#filter-input``, and ``_render_status()`` and
``action_sort(key)`` methods.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from torchscan_tui.analysis.rows import FilterError
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.operator_table import OperatorTable

FILTER_INPUT = "filter-input"

# The keys of the actions below, in both apps' BINDINGS (each app adds its own sorts).
FILTER_BINDINGS = [
    # priority: handled as it arrives, so the keys typed after it in one burst (a paste,
    # tmux send-keys '/gelu') reach the filter, not the app's other keys.
    Binding(
        "slash", "focus_filter", "Filter", tooltip="Filter rows by name or shape", priority=True
    ),
    # Likewise: ctrl+u then text in one burst clears the filter before the text lands.
    Binding("ctrl+u", "clear_filter", "Clear", show=False, priority=True),
]
SELECTION_BINDINGS = [
    Binding("space", "toggle_select", "Select", tooltip="Select or unselect the row"),
    Binding(
        "a",
        "select_all",
        "All",
        show=False,
        tooltip="Select all visible rows; again unselects them",
    ),
    Binding("A", "clear_selection", "Clear", show=False, tooltip="Unselect every row"),
]


class RowBrowsing:
    def watch_filter_input(self) -> None:
        """Filter as the box's value changes, within the key press that changed it.

        The watcher runs before the screen paints the box, so the box and the rows it
        selects reach the screen in one frame. ``Input.Changed`` arrives after that
        frame, and the table waited for the next one (~20 ms later at 60 frames/s).
        Call from ``on_mount``.
        """
        box = self.query_one(f"#{FILTER_INPUT}", Input)
        self.watch(box, "value", self._apply_filter, init=False)

    def _apply_filter(self, text: str) -> None:
        """Filter as the user types; a bad filter says so in place and hides nothing."""
        bar = self.query_one(FilterBar)
        shown = self.view.visible
        try:
            changed = self.view.set_filter(text)
            bar.report_error("")
        except FilterError as exc:
            changed = self.view.visible != shown
            bar.report_error(f"{exc} (showing all rows)")
        if changed:
            self.table.view_changed()
        self._render_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == FILTER_INPUT:
            self.screen.set_focus(self.table)  # now: the next keys are commands again

    def on_operator_table_sort_requested(self, event: OperatorTable.SortRequested) -> None:
        self.action_sort(event.key)  # a click on a column's title: as its sort key

    def filter_key_applies(self) -> bool:
        """``/`` focuses the filter unless text is being typed (then it is a character)."""
        return not isinstance(self.focused, Input)

    def clear_filter_applies(self) -> bool:
        """``ctrl+u`` clears the filter while it is being typed in (as in a shell)."""
        return getattr(self.focused, "id", None) == FILTER_INPUT

    def action_clear_filter(self) -> None:
        self.query_one(f"#{FILTER_INPUT}", Input).action_delete_left_all()

    def action_focus_filter(self) -> None:
        # Now, not after the queued events as focus() does: the keys typed right after
        # "/" in one burst (a paste, tmux send-keys) are the filter's text, not commands.
        self.screen.set_focus(self.query_one(f"#{FILTER_INPUT}", Input))

    def action_toggle_select(self) -> None:
        self.view.toggle_selected(self.table.cursor)
        self.table.refresh()
        self._render_status()

    def action_select_all(self) -> None:
        """a: select every visible row, or unselect them when all are selected."""
        self.view.toggle_all_visible()
        self.table.refresh()
        self._render_status()

    def action_clear_selection(self) -> None:
        self.view.clear_selection()
        self.table.refresh()
        self._render_status()
