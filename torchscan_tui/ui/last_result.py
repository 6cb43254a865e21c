"""What ``r`` keeps on screen: the last run that ended with rows, until the next run's
rows come (pure, no Textual).

A rerun used to clear the table at once, and a cancel before any row came left "no
rows". Now the last good result stays, dimmed, until the new run's first rows take its
place; if the new run ends without a row (cancelled, failed), the screen goes back to
it, as it was. A run that ends *done* without rows is news, not a failure: it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchscan_tui.formats.report_schema import Head


@dataclass
class LastResult:
    """The last good rows and their head (context, kernels, overview...); ``showing``:
    they are on screen, dimmed, standing in for a run that has sent no row yet."""

    rows: list | None = None
    head: Head | None = None
    showing: bool = False

    def begin_run(self) -> list:
        """A run starts: the rows to show until its own come ([] when there are none)."""
        self.showing = self.rows is not None
        return list(self.rows) if self.rows is not None else []

    def rows_came(self) -> bool:
        """The run's first rows came: whether they replace the last result's on screen."""
        replacing, self.showing = self.showing, False
        return replacing

    def run_ended(self, outcome: str, rows: list, head: Head) -> tuple[list | None, Head]:
        """The run ended: (the rows to show instead, None to keep those shown; the head
        to show). A done run with rows becomes the last result."""
        if self.showing:  # no row came
            self.showing = False
            if outcome == "done":  # a run that found no rows: that is the news
                self.rows = self.head = None
                return [], head
            last: Head = {**(self.head or {})}
            last["context"] = {**(last.get("context") or {}), **(head.get("context") or {})}
            return None, last
        if outcome == "done" and rows:
            self.rows, self.head = rows, head
        return None, head
