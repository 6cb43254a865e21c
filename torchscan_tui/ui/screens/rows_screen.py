"""The typed base of the screens that browse rows: filter, select, sort, export, help.

The profile screen and the compare screen are both a :class:`RowsScreen`: a row view
(``view``), a table reading it (``table``), a filter box (``#filter-input``) and a status
line. What they share lives here, once: the filter keys, the selection keys, asking where
to export and writing off the UI thread, help made from the screen's own bindings, and a
command-palette entry for every action that applies.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.markup import escape as escape_markup
from textual.screen import Screen
from textual.widgets import Input

from torchscan_tui.analysis.filtering import FilterError
from torchscan_tui.analysis.noise import NOISE_DESCRIPTION
from torchscan_tui.analysis.row_view import RowView, same_ids
from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.export import COLUMNS, export_rows, format_for
from torchscan_tui.ui.widgets.filter_bar import FilterBar
from torchscan_tui.ui.widgets.operator_table import OperatorTable

# The export dialog and help load when first opened: not needed to show a profile.
if TYPE_CHECKING:
    from torchscan_tui.ui.screens.export_dialog import ExportRequest

FILTER_INPUT = "filter-input"

# Help first in each screen's bindings: a narrow terminal's footer cuts its last keys off.
HELP_BINDING = Binding("question_mark,f1", "help", "Help", tooltip="Keys and what they do")
FILTER_BINDINGS = [
    # priority: handled as it arrives, so the keys typed after it in one burst (a paste,
    # tmux send-keys '/gelu') reach the filter, not the screen's other keys.
    Binding(
        "slash", "focus_filter", "Filter", tooltip="Filter rows by name or shape", priority=True
    ),
    # Likewise: ctrl+u then text in one burst clears the filter before the text lands.
    Binding(
        "ctrl+u",
        "clear_filter",
        "Clear",
        show=False,
        tooltip="Clear the filter (typing)",
        priority=True,
    ),  # fmt: skip
]
NOISE_BINDING = Binding(
    "h",
    "toggle_noise",
    "Noise",
    show=False,
    tooltip="Hide or show [memory] rows and view-only operators",
)
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
QUIT_BINDING = Binding("q,f10", "quit", "Quit", tooltip="Quit")
LEAVE_BINDING = Binding("escape", "leave", "Back", show=False, tooltip="Leave the filter")
# Not listed again in the palette: Textual lists its own Quit; escape and ctrl+u are keys.
PALETTE_SKIPS = frozenset({"leave", "quit", "clear_filter"})

Write = Callable[..., object]
"""``write(path, overwrite=...)``: writes the export atomically and returns the path."""


class RowsScreen(Screen[None]):
    """A screen of rows. Subclasses compose the widgets, set ``view`` and define
    :meth:`render_status` and :meth:`action_sort`; ``HELP_NOTES`` are the keys that are not
    bindings (arrows, the mouse) and what the marks on screen mean."""

    HELP_NOTES: ClassVar[list[tuple[str, str]]] = []
    view: RowView

    @property
    def table(self) -> OperatorTable:
        return self.query_one(OperatorTable)

    def render_status(self) -> None:
        raise NotImplementedError

    def action_sort(self, key: str) -> None:
        raise NotImplementedError

    # Filter ---------------------------------------------------------------------------

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
            changed = not same_ids(self.view.visible, shown)
            bar.report_error(f"{exc} (showing all rows)")
        if changed:
            self.table.view_changed()
        self.render_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == FILTER_INPUT:
            self.set_focus(self.table)  # now: the next keys are commands again

    def on_operator_table_sort_requested(self, event: OperatorTable.SortRequested) -> None:
        self.action_sort(event.key)  # a click on a column's title: as its sort key

    def typing(self) -> bool:
        """Whether a text box has the focus (then keys are characters, not commands)."""
        return isinstance(self.focused, Input)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_filter":  # "/" is a character while text is being typed
            return not self.typing()
        if action == "clear_filter":  # ctrl+u clears the filter being typed in
            return getattr(self.focused, "id", None) == FILTER_INPUT
        if action in ("toggle_select", "select_all", "export_rows"):
            return bool(self.view.visible)
        if action == "clear_selection":
            return bool(self.view.selected)
        if action == "chart":
            return bool(self.view.rows)
        return True

    def action_clear_filter(self) -> None:
        self.query_one(f"#{FILTER_INPUT}", Input).action_delete_left_all()

    def action_focus_filter(self) -> None:
        # Now, not after the queued events as focus() does: the keys typed right after
        # "/" in one burst (a paste, tmux send-keys) are the filter's text, not commands.
        self.set_focus(self.query_one(f"#{FILTER_INPUT}", Input))

    def action_leave(self) -> None:
        """Escape: leave the filter."""
        if self.typing():
            self.set_focus(self.table)

    def action_toggle_noise(self) -> None:
        """h: hide the noise rows (see :mod:`torchscan_tui.analysis.noise`), or show them."""
        self.view.set_hide_noise(not self.view.hide_noise)
        self.table.view_changed()
        self.render_status()
        self.notify(
            f"hidden: {NOISE_DESCRIPTION}; h shows them" if self.view.hide_noise
            else "every row shows again",
            title="Noise",
        )  # fmt: skip

    # Selection ------------------------------------------------------------------------

    def _selection_changed(self) -> None:
        self.table.repaint_changed_lines()
        self.render_status()

    def action_toggle_select(self) -> None:
        self.view.toggle_selected(self.table.cursor)
        self._selection_changed()

    def action_select_all(self) -> None:
        """a: select every visible row, or unselect them when all are selected."""
        self.view.toggle_all_visible()
        self._selection_changed()

    def action_clear_selection(self) -> None:
        self.view.clear_selection()
        self._selection_changed()

    # Exports --------------------------------------------------------------------------

    def ask_where(
        self,
        title: str,
        name: str,
        notes: list[str],
        then: Callable[[ExportRequest | None], None],
        validate: Callable[[str], object] | None = None,
        verb: str = "Export",
    ) -> None:
        """The export dialog; ``then`` gets the request, or None when it was cancelled."""
        from torchscan_tui.ui.screens.export_dialog import ExportDialog

        dialog = ExportDialog(title, name, notes, validate=validate, verb=verb)
        self.app.push_screen(dialog, then)

    def ask_to_export_rows(
        self,
        title: str,
        name: str,
        note: str,
        rows: Sequence[Mapping[str, Any]],
        what: str,
        columns: Sequence[str] = COLUMNS,
    ) -> None:
        """Ask where, then write ``rows`` as CSV, JSON or Markdown (the extension says)."""

        def write_to(request: ExportRequest | None) -> None:
            if request is not None:
                self.write_export(partial(export_rows, rows, columns=columns), request, what)

        self.ask_where(title, name, [note], write_to, format_for)

    @work(thread=True, group="export", exit_on_error=False)
    def write_export(
        self, write: Write, request: ExportRequest, what: str, then_say: str = ""
    ) -> None:
        """Write in a thread (a big export must not freeze the screen), then say how it went.

        ``then_say`` follows the notice, ``{path}`` in it the file written (shell-quoted,
        for a command to copy).
        """
        app = self.app
        try:
            written = write(request.path, overwrite=request.overwrite)
        except ExportError as exc:
            app.call_from_thread(app.notify, str(exc), title="Export failed", severity="error")
            return
        message = f"Wrote {what} to {written}" + then_say.format(path=shlex.quote(str(written)))
        app.call_from_thread(app.notify, message, title="Exported")

    # Help, the palette and quitting ---------------------------------------------------

    def key_names(self, binding: Binding) -> str:
        """A binding's keys as the footer shows them: ``?, f1``."""
        return key_names(self, binding)

    def help_rows(self) -> list[tuple[str, str]]:
        """Every binding of this screen, as keys and what they do, then the notes."""
        rows = [
            (self.key_names(binding), binding.tooltip or binding.description)
            for binding in self.BINDINGS
            if isinstance(binding, Binding)
        ]
        return rows + list(self.HELP_NOTES)

    def action_help(self) -> None:
        from torchscan_tui.ui.screens.help_screen import HelpScreen

        self.app.push_screen(HelpScreen(self.help_rows()))

    def palette_commands(self) -> Iterable[SystemCommand]:
        """Every action of this screen that applies now, once each, with its keys."""
        return binding_commands(self)

    async def action_quit(self) -> None:
        self.app.exit()


def key_names(screen: Screen, binding: Binding) -> str:
    """A binding's keys as the footer shows them: ``?, f1``."""
    keys = binding.key.split(",")
    return ", ".join(screen.app.get_key_display(replace(binding, key=key)) for key in keys)


def binding_commands(screen: Screen) -> Iterable[SystemCommand]:
    """A palette entry for every binding of ``screen`` whose action applies now (its
    ``check_action`` says), once each, with its keys: the palette lists what the keys do."""
    for binding in screen.BINDINGS:
        assert isinstance(binding, Binding)
        name = binding.action.split("(")[0]
        if name in PALETTE_SKIPS or not screen.check_action(name, ()):
            continue
        keys = key_names(screen, binding)
        # The palette reads titles as markup: "[memory]" in a text would vanish.
        yield SystemCommand(
            escape_markup(f"{binding.description}: {binding.tooltip}"),
            escape_markup(f"keys: {keys}" if "," in binding.key else f"key: {keys}"),
            partial(screen.run_action, binding.action),
        )
