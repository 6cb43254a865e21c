"""The line under the table: N of M grouped operators, row limit, filter, sort, selection."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.widgets.one_line import OneLine


@dataclass(frozen=True)
class RowCounts:
    """What the status line says. ``total``: rows the profile grouped (None: unknown);
    ``ended``: the run is over, so rows short of the total will not come."""

    shown: int = 0
    received: int = 0
    total: int | None = None
    row_limit: int | None = None
    filter_text: str = ""
    sort_label: str = "rank"
    selected: int = 0
    noise_hidden: bool = False
    message: str = ""
    ended: bool = False


def status_text(status: RowCounts) -> Text:
    text = Text()
    _append_count(text, status)
    if status.selected:
        text.append(f" · {status.selected} selected", style="bold")
    text.append(f" · sort {status.sort_label}")
    if status.filter_text:
        text.append(f" · filter “{neutralise_controls(status.filter_text)}”")
    if status.noise_hidden:
        text.append(" · noise hidden (h)")
    text.append(f" · limit {status.row_limit if status.row_limit is not None else 'none'}")
    if status.message:
        text.append(f" · {neutralise_controls(status.message)}", style="italic")
    return text


class StatusBar(OneLine):
    """Attributes down: the screen sets :attr:`status`; the line follows."""

    status: reactive[RowCounts] = reactive(RowCounts, layout=False, repaint=False)

    def watch_status(self, status: RowCounts) -> None:
        self.show_text(status_text(status))


def _append_count(text: Text, status: RowCounts) -> None:
    """How many rows show, of how many the profile grouped, and whether more will come."""
    shown, received, total = status.shown, status.received, status.total
    if total is None and not received:  # the profile has not begun, or never will
        text.append("no rows: the run ended before any came" if status.ended else "no rows yet")
        return
    total_text = "?" if total is None else f"{total:,}"
    text.append(f"{shown:,} of {total_text} grouped operators", style="bold")
    limit = status.row_limit
    expected = total if total is None or limit is None else min(total, limit)
    if expected is None or received < expected:
        if status.ended:
            text.append(f" (only {received:,} received)", style="bold")
        else:
            text.append(f" ({received:,} received so far)", style="dim")
