"""The warning line under the header: the report's own notes, said once for the run.

Report-level diagnostics (CUDA time unavailable, processes not profiled, a trace that
could not be written) were only in each row's detail pane, where a user who never
opens one never sees them. The line shows the first note whole as far as it fits and
how many more there are; the detail pane (enter) lists them all. Hidden when there are
none.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.palette import ANSI, Palette, ThemedWidget
from torchscan_tui.ui.widgets.one_line import OneLine


def notes_text(notes: tuple[tuple[str, str], ...], palette: Palette = ANSI) -> Text:
    """``⚠ code: message  (+2 more notes: enter on a row)``; outside text shown literally."""
    text = Text()
    if not notes:
        return text
    code, message = notes[0]
    if code == "failed":  # why the run failed: ui/screen_figures.notes_of puts it first
        text.append(" ✗ ", style=f"bold {palette.error}")
    else:
        text.append(" ⚠ ", style=f"bold {palette.warning}")
    text.append(f"{neutralise_controls(code)}: ", style="bold")
    text.append(neutralise_controls(message))
    more = len(notes) - 1
    if more:
        text.append(f"  (+{more} more note{'s' if more > 1 else ''}: enter on a row)",
                    style="dim")  # fmt: skip
    return text


class NotesLine(ThemedWidget, OneLine):
    """Attributes down: the screen sets :attr:`notes` ((code, message) pairs)."""

    notes: reactive[tuple[tuple[str, str], ...]] = reactive((), layout=False, repaint=False)

    def on_mount(self) -> None:
        self.follow_theme()

    def watch_notes(self, notes: tuple[tuple[str, str], ...]) -> None:
        self.display = bool(notes)
        self.show_text(notes_text(notes, self.palette))

    def redraw(self) -> None:
        self.watch_notes(self.notes)
