"""The workload's stdout/stderr: a bounded tail that says how much it dropped."""

from __future__ import annotations

from textual.widgets import RichLog

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.run_state import LOG_LINE_LIMIT


class LogPane(RichLog):
    """Lines arrive in batches from the app; stderr lines start with ``!``."""

    def __init__(self, **kwargs):
        super().__init__(max_lines=LOG_LINE_LIMIT, wrap=False, markup=False, **kwargs)
        self.border_title = "workload output"

    def add_lines(self, lines: list[str], dropped: int) -> None:
        for line in lines:
            self.write(neutralise_controls(line))
        if dropped:
            self.border_title = f"workload output ({dropped:,} earlier lines dropped)"

    def reset(self) -> None:
        self.clear()
        self.border_title = "workload output"
