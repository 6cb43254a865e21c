"""The top line: script, device, the phase of the run, elapsed time and a spinner."""

from __future__ import annotations

from rich.text import Text

from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.ui.run_state import PHASE_LABELS
from torchscan_tui.ui.widgets.one_line import OneLine

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PHASE_STYLES = {"done": "bold green", "failed": "bold red", "cancelled": "bold yellow"}


class RunHeader(OneLine):
    """Rendered from attributes the app sets with :meth:`show`."""

    def show(
        self,
        title: str,
        device: str,
        phase: str,
        elapsed: float | None,
        running: bool,
        tick: int,
        incomplete: bool = False,
        totals: str = "",
    ) -> None:
        """``incomplete``: the run or file ended without all its rows (the notice said why).
        ``totals``: the sums of self time, last (a narrow terminal cuts them first)."""
        text = Text()
        text.append(" torchscan-tui ", style="bold reverse")
        text.append(f" {neutralise_controls(title)}", style="bold")
        text.append(f"  device {neutralise_controls(device)}  ", style="dim")
        if running:
            text.append(SPINNER[tick % len(SPINNER)] + " ", style="bold cyan")
        if incomplete:
            text.append(f"{PHASE_LABELS.get(phase, phase)}, incomplete", style="bold yellow")
        else:
            text.append(PHASE_LABELS.get(phase, phase), style=PHASE_STYLES.get(phase, "bold cyan"))
        if elapsed is not None:
            text.append(f"  {elapsed:.1f} s", style="dim")
        if totals:
            text.append(f"  {totals}", style="dim")
        self.show_text(text)
