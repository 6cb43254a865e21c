"""Peak RSS: the kernel's figure, how the run ended, and a sampled RSS sparkline.

The big number is the kernel's high-water mark (wait4 ru_maxrss). The sparkline is
sampled from /proc while the child ran and is approximate: the two are labelled apart.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from torchscan_tui.common.formatting import MISSING, format_bytes
from torchscan_tui.common.text import neutralise_controls

RSS_EXPLANATION = (
    "Peak RSS is the kernel's high-water mark (wait4 ru_maxrss) of the largest single "
    "process among those reaped for this run: the workload, or a child it waited for. "
    "It is not a sum over processes, not an inference-only delta and not GPU memory. "
    "The sparkline is sampled from /proc while the workload ran and is approximate."
)


class RssPanel(Vertical):
    """Attributes down: the app calls :meth:`show` with what it knows."""

    def compose(self) -> ComposeResult:
        yield Static(id="rss-figures")
        yield Sparkline([], id="rss-sparkline")

    def show(
        self,
        rss: dict | None,
        status: dict | None,
        wall_seconds: float | None,
        samples: list,
        leftovers: int = 0,
        pending: bool = True,
    ) -> None:
        text = Text()
        text.append("Peak RSS ", style="bold")
        if rss is None:
            text.append(MISSING, style="bold")
            if pending:
                text.append("  (kernel figure once the workload exits)", style="dim")
            else:
                text.append("  (not measured: no RSS figure for this run or file)", style="dim")
        else:
            text.append(format_bytes(rss["value"]), style="bold magenta")
            if (status or {}).get("cancelled"):
                # The child was stopped: its mark covers the run up to then, not all of it.
                text.append("  kernel high-water mark up to the cancel, not the whole run's")
            else:
                text.append("  kernel wait4 high-water mark, largest reaped process", style="dim")
            text.append("\n")
            description = (status or {}).get("description") or MISSING
            style = "green" if description == "exited with status 0" else "yellow"
            text.append(neutralise_controls(description), style=style)
            wall = MISSING if wall_seconds is None else f"{wall_seconds:.2f} s"
            text.append(f" · wall {wall}")
            text.append(f" · launcher floor {format_bytes(rss.get('launcher_floor'))}")
            if leftovers:
                text.append(f" · {leftovers} leftover process(es) ended", style="yellow")
            if len(samples) > 1:
                text.append(" · below: RSS sampled from /proc (approximate)", style="dim")
        self.query_one("#rss-figures", Static).update(text)
        sparkline = self.query_one("#rss-sparkline", Sparkline)
        sparkline.display = len(samples) > 1
        sparkline.data = [float(value) for _, value in samples]
        sparkline.tooltip = "sampled RSS (approximate, /proc); the peak above is the kernel's"
