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

from torchscan_tui.common.formatting import counted
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.palette import ANSI, Palette, ThemedWidget
from torchscan_tui.ui.widgets.one_line import OneLine


def notes_text(
    notes: tuple[tuple[str, str], ...], palette: Palette = ANSI, width: int | None = None
) -> Text:
    """``⚠ code: message  (+2 more notes: enter on a row)``; outside text shown literally.

    ``width``: the line's; a first note too long for it is cut where it says so and
    where the rest is (``… (all of it: enter on a row)``): cut at the edge, the part
    lost was often what the note was for ("rows are sorted by how much ...")."""
    text = Text()
    if not notes:
        return text
    code, message = notes[0]
    if code == "failed":  # why the run failed: ui/screen_figures.notes_of puts it first
        text.append(" ✗ ", style=f"bold {palette.error}")
    else:
        text.append(" ⚠ ", style=f"bold {palette.warning}")
    text.append(f"{neutralise_controls(code)}: ", style="bold")
    body = Text(neutralise_controls(message))
    more = len(notes) - 1
    tail = f"  (+{counted(more, 'more note')}: enter on a row)" if more else ""
    if width is not None and text.cell_len + body.cell_len + len(tail) > width:
        also = f" and {more} more" if more else ""
        tail = f"… (all of it{also}: enter on a row)"
        room = width - text.cell_len - len(tail)
        if room >= MIN_SHOWN:
            body.truncate(room)
            body.rstrip()
        else:  # too narrow to say it: the line is cut at its edge, as any line is
            tail = ""
    text.append_text(body)
    if tail:
        text.append(tail, style="dim")
    return text


MIN_SHOWN = 20  # of a cut note's text, the least worth showing with where the rest is


class NotesLine(ThemedWidget, OneLine):
    """Attributes down: the screen sets :attr:`notes` ((code, message) pairs)."""

    notes: reactive[tuple[tuple[str, str], ...]] = reactive((), layout=False, repaint=False)

    def on_mount(self) -> None:
        self.follow_theme()

    def on_resize(self) -> None:
        self.redraw()

    def watch_notes(self, notes: tuple[tuple[str, str], ...]) -> None:
        self.display = bool(notes)
        width = self.content_size.width or None
        self.show_text(notes_text(notes, self.palette, width))

    def redraw(self) -> None:
        self.watch_notes(self.notes)
