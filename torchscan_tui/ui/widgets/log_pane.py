"""The workload's stdout/stderr: a bounded tail that says how much it dropped."""

from __future__ import annotations

from textual.widgets import RichLog

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.run_state import LOG_LINE_LIMIT

# Characters of a line drawn: the pane shows a screen's width or so at a time, and 5,000
# lines of 4 KiB each took seconds to draw when l opened it.
LINE_CELLS = 1000


class LogPane(RichLog):
    """Lines arrive in batches from the app; stderr lines start with ``!``."""

    def __init__(self, **kwargs):
        super().__init__(max_lines=LOG_LINE_LIMIT, wrap=False, markup=False, **kwargs)
        self.border_title = "workload output"

    def add_lines(self, lines: list[str], dropped: int) -> None:
        for line in lines:
            shown = neutralise_controls(line)
            if len(shown) > LINE_CELLS:
                shown = shown[:LINE_CELLS] + f"… ({len(shown) - LINE_CELLS:,} more characters)"
            self.write(shown)
        if dropped:
            self.border_title = f"workload output ({dropped:,} earlier lines dropped)"

    def reset(self) -> None:
        self.clear()
        self.border_title = "workload output"
