"""``L``: CPU self time by the source line that led to it, as py-spy and Scalene show
it; each line with the operators it ran. ``enter`` opens the line in ``$EDITOR``.

The lines are the rows' call sites (:mod:`torchscan_tui.analysis.sites`): the innermost
frame in the user's files of each op's Python stack, recorded with ``with_stack``.
Every name is outside text: shown literally.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from torchscan_tui.analysis.records import LineRow
from torchscan_tui.analysis.sites import by_line, lines_matching, parse_site, sorted_lines
from torchscan_tui.common.formatting import format_seconds
from torchscan_tui.ui.editor import open_in_editor
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.rows_screen import binding_commands
from torchscan_tui.ui.widgets.fitted_data_table import FittedDataTable
from torchscan_tui.ui.widgets.table_columns import Column

# The line and its operators share the width the figures leave them; on a narrow
# terminal the operators go before the figures (ui/widgets/fitted_data_table.py).
COLUMNS = (
    Column("site", "source line", 0, weight=1, min_width=30),
    Column("cpu", "CPU self", 11),
    Column("share", "share", 7),
    Column("device", "device self", 11),
    Column("operators", "operators", 0, weight=1, min_width=24),
)
DROP_ORDER = ("operators", "share", "device")
SITE_WIDTH = 52  # where shown_site cuts when not given its cell's width
SHOWN_OPERATORS = 3


def shown_site(site: str, roots: Sequence[str], width: int = SITE_WIDTH) -> str:
    """``site`` as its cell shows it: its file relative to the first of ``roots`` that
    holds it (a live run's stacks name files by absolute path), and, where that is still
    wider than ``width``, cut from the left. What tells lines apart is the file's name,
    the line and the function, at the end; the table cut its cells on the right
    (``/work/main/sample_workloads/convnet_train.py(28): w…``)."""
    parsed = parse_site(site)
    if parsed is not None and os.path.isabs(parsed[0]):
        file, line, function = parsed
        for root in roots:
            if root and os.path.isabs(root) and _holds(root, file):
                site = f"{os.path.relpath(file, root)}({line}): {function}"
                break
    if len(site) > width:
        site = "…" + site[len(site) - width + 1 :]
    return site


def _holds(root: str, file: str) -> bool:
    """Whether the folder ``root`` holds ``file`` (both absolute; by their text)."""
    try:
        return os.path.commonpath([root, file]) == os.path.normpath(root)
    except ValueError:  # one on another drive
        return False


def operators_text(line: LineRow) -> str:
    """``aten::addmm 3.1 ms, aten::relu 0.4 ms (+2 more)``."""
    named = list(line["operators"].items())
    text = ", ".join(f"{name} {format_seconds(seconds)}" for name, seconds
                     in named[:SHOWN_OPERATORS])  # fmt: skip
    if len(named) > SHOWN_OPERATORS:
        text += f" (+{len(named) - SHOWN_OPERATORS} more)"
    return text


class ByLineScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,L,q", "close", "Back", tooltip="Back to the operators"),
        Binding("enter", "open_line", "Open", tooltip="Open the line in $VISUAL / $EDITOR"),
        Binding("c", "sort(False)", "CPU", tooltip="Largest CPU self time first"),
        Binding("g", "sort(True)", "Device", tooltip="Largest device self time first"),
        Binding(
            "slash",
            "focus_filter",
            "Filter",
            tooltip="Lines whose file, function or operators hold every word",
            priority=True,  # as the profile's and kernels' "/": see action_focus_filter
        ),  # fmt: skip
    ]

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        total: float | None,
        roots: Sequence[str],
        scope: str = "",
    ):
        super().__init__()
        self.by_device = False
        self.words = ""  # this screen's own filter, over the lines
        self.every_line = by_line(rows)  # the profile screen's rows' (its filter applied)
        self.lines = self.every_line  # those the words match
        self.total = total  # every row's CPU self time: each line's share of it
        self.roots = list(roots)  # where a relative file is looked for
        self.device_measured = any(
            line["device_self_seconds"] is not None for line in self.every_line
        )
        self.scope = scope  # which rows: "every row", "the filter ..."

    def compose(self) -> ComposeResult:
        yield Static(id="by-line-title")
        yield Input(placeholder="/ filter: words in the line's file, function or operators",
                    id="by-line-filter")  # fmt: skip
        yield FittedDataTable(COLUMNS, DROP_ORDER, id="by-line-table", cursor_type="row",
                              zebra_stripes=True)  # fmt: skip
        yield Static(id="by-line-status")
        yield Footer()

    def on_mount(self) -> None:
        self._fill()
        self.query_one(DataTable).focus()

    def _fill(self) -> None:
        accent = palette_of(self.app).accent
        self.query_one(FittedDataTable).show(
            lambda widths: [
                {
                    "site": literal(
                        shown_site(line["site"], self.roots, widths["site"]), one_line=True
                    ),
                    "cpu": Text(format_seconds(line["cpu_self_seconds"]), justify="right"),
                    "share": Text(self._share(line), justify="right"),
                    "device": Text(format_seconds(line["device_self_seconds"]), justify="right"),
                    "operators": literal(operators_text(line), accent, one_line=True),
                }
                for line in self.lines
            ],
            keep=frozenset({"device" if self.by_device else "cpu"}),
            # a profile without device time: its column of dashes gives its width away
            hidden=frozenset() if self.device_measured else frozenset({"device"}),
        )
        title = Text(" Source lines ", style="bold reverse")
        title.append("  self time by the line of your code that led to it", style="bold")
        if self.scope:
            title.append(f"  ({self.scope})", style="dim")
        self.query_one("#by-line-title", Static).update(title)
        order = "device" if self.by_device else "CPU"
        matching = f" matching {self.words!r}" if self.words.strip() else ""
        self.say(f" {len(self.lines):,} source lines{matching}, largest {order} self time "
                 "first; enter opens one, c / g sort, / filters")  # fmt: skip

    def action_sort(self, by_device: bool) -> None:
        self.by_device = by_device
        self._refilter()

    def _refilter(self) -> None:
        """The lines again, in the sort order, those the words match (the rows' lines
        are summed once, when the screen opens)."""
        self.every_line = sorted_lines(self.every_line, self.by_device)
        self.lines = lines_matching(self.every_line, self.words)
        self._fill()

    def action_focus_filter(self) -> None:
        # Now, not after the queued events as focus() does: keys typed right after "/"
        # in one burst (a paste, tmux send-keys) are the filter's text, not c / g / q.
        self.set_focus(self.query_one("#by-line-filter", Input))

    @on(Input.Changed, "#by-line-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.words = event.value
        self._refilter()

    @on(Input.Submitted, "#by-line-filter")
    def _filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.focused, Input) and action in ("sort", "focus_filter", "close"):
            return action == "close"  # typing: c, g, / and q are characters; escape leaves
        return True

    def _share(self, line: LineRow) -> str:
        if not self.total:
            return "—"
        return f"{line['cpu_self_seconds'] / self.total:.1%}"

    def say(self, words: str) -> None:
        self.query_one("#by-line-status", Static).update(literal(words, one_line=True))

    def action_close(self) -> None:
        if isinstance(self.focused, Input):  # escape in the filter box: back to the lines
            self.query_one(DataTable).focus()
            return
        self.dismiss()

    @on(DataTable.RowSelected)
    def _row_chosen(self) -> None:  # enter on the table: the table's own key
        self.action_open_line()

    def action_open_line(self) -> None:
        table = self.query_one(DataTable)
        if not self.lines:
            return
        line = self.lines[table.cursor_row]
        said = self.open_in_editor(line)
        if said:
            self.say(said)
            self.notify(said, title="Open the line", severity="warning")

    def open_in_editor(self, line: LineRow) -> str | None:
        """Open ``line`` in the user's editor; what went wrong, in one line, if anything."""
        if line["file"] is None or line["line"] is None:
            return f"{line['site']}: not a file and line"
        return open_in_editor(self.app, line["file"], line["line"], self.roots)

    def palette_commands(self) -> Iterable[SystemCommand]:
        return binding_commands(self)
