"""The line under the table: N of M grouped operators, row limit, filter, sort, selection."""

from __future__ import annotations

from rich.text import Text

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.widgets.one_line import OneLine


class StatusBar(OneLine):
    def show(
        self,
        shown: int,
        received: int,
        total: int | None,
        row_limit: int | None,
        filter_text: str,
        sort_label: str,
        selected: int,
        message: str = "",
        ended: bool = False,
    ) -> None:
        """``ended``: the run is over, so rows short of the total will not come."""
        text = Text()
        _append_count(text, shown, received, total, row_limit, ended)
        if selected:
            text.append(f" · {selected} selected", style="bold")
        text.append(f" · sort {sort_label}")
        if filter_text:
            text.append(f" · filter “{neutralise_controls(filter_text)}”")
        text.append(f" · limit {row_limit if row_limit is not None else 'none'}")
        if message:
            text.append(f" · {neutralise_controls(message)}", style="italic")
        self.show_text(text)


def _append_count(
    text: Text, shown: int, received: int, total: int | None, row_limit: int | None, ended: bool
) -> None:
    """How many rows show, of how many the profile grouped, and whether more will come."""
    if total is None and not received:  # the profile has not begun, or never will
        text.append("no rows: the run ended before any came" if ended else "no rows yet")
        return
    total_text = "?" if total is None else f"{total:,}"
    text.append(f"{shown:,} of {total_text} grouped operators", style="bold")
    expected = total if total is None or row_limit is None else min(total, row_limit)
    if expected is None or received < expected:
        if ended:
            text.append(f" (only {received:,} received)", style="bold")
        else:
            text.append(f" ({received:,} received so far)", style="dim")
