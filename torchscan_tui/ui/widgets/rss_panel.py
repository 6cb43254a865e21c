"""Peak RSS: the kernel's figure, how the run ended, and a sampled RSS sparkline.

The big number is the kernel's high-water mark (wait4 ru_maxrss). The sparkline is
sampled from /proc while the child ran and is approximate: the two are labelled apart.
While the workload runs, the latest sample and the highest so far stand in the figure's
place (labelled as samples), and the sparkline has its axis: the RSS range it spans on
the left, the seconds on the right.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Sparkline, Static

from torchscan_tui.common.formatting import MISSING, format_bytes
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.formats.report_schema import ExitStatus, PeakRss
from torchscan_tui.ui.palette import ANSI, Palette, ThemedWidget

RSS_EXPLANATION = (
    "Peak RSS is the kernel's high-water mark (wait4 ru_maxrss) of the largest single "
    "process among those reaped for this run: the workload, or a child it waited for. "
    "It is not a sum over processes, not an inference-only delta and not GPU memory. "
    "The sparkline is sampled from /proc while the workload ran and is approximate."
)


CURVE_LABEL = "sampled from /proc (approximate)"


@dataclass(frozen=True)
class RssFigures:
    """What the panel shows: the kernel's figure (``rss``, None until the workload
    exits), how the run ended, and the sampled curve. ``pending``: the figure may come."""

    rss: PeakRss | None = None
    status: ExitStatus | None = None
    wall_seconds: float | None = None
    samples: tuple = ()
    leftovers: int = 0
    pending: bool = True
    scope: str = ""  # what the figure covers when not the whole run (step_summary.peak_scope)
    steps_line: str | None = None  # the peak pass's own steps, unprofiled
    missing: str = "no RSS figure for this run or file"  # why none, once none can come
    device_peak: str | None = None  # the device allocator's peak over the window (CUDA)


def figures_text(figures: RssFigures, palette: Palette = ANSI) -> Text:
    rss, status = figures.rss, figures.status or {}
    text = Text()
    text.append("Peak RSS ", style="bold")
    if rss is None:
        text.append(MISSING, style="bold")
        if figures.pending and figures.samples:
            now, highest = figures.samples[-1][1], max(value for _, value in figures.samples)
            text.append(f"  now {format_bytes(now)}", style=f"bold {palette.memory}")
            text.append(f", highest so far {format_bytes(highest)}", style=palette.memory)
            text.append(" (sampled from /proc; the kernel's peak once the workload exits)",
                        style="dim")  # fmt: skip
        elif figures.pending:
            text.append("  (kernel figure once the workload exits)", style="dim")
        else:
            text.append(f"  (not measured: {figures.missing})", style="dim")
        return text
    text.append(format_bytes(rss["value"]), style=f"bold {palette.memory}")
    if figures.scope:  # ended early (a stop, --rss-steps), or asked to and never was
        text.append(f"  kernel high-water mark{figures.scope}")
    elif status.get("cancelled"):
        # The child was stopped: its mark covers the run up to then, not all of it.
        text.append("  kernel high-water mark up to the cancel, not the whole run's")
    else:
        text.append("  kernel wait4 high-water mark, largest reaped process", style="dim")
    text.append("\n")
    description = status.get("description") or MISSING
    style = palette.success if description == "exited with status 0" else palette.warning
    text.append(neutralise_controls(description), style=style)
    wall = MISSING if figures.wall_seconds is None else f"{figures.wall_seconds:.2f} s"
    text.append(f" · wall {wall}")
    text.append(f" · launcher floor {format_bytes(rss.get('launcher_floor'))}")
    if figures.leftovers:
        text.append(f" · {figures.leftovers} leftover process(es) ended", style=palette.warning)
    if figures.steps_line:
        text.append(f" · {figures.steps_line}")
    if figures.device_peak:
        text.append(f" · {figures.device_peak}", style=palette.memory)
    return text


class RssPanel(ThemedWidget, Vertical):
    """Attributes down: the screen sets :attr:`figures`; the panel follows."""

    figures: reactive[RssFigures] = reactive(RssFigures, layout=False, repaint=False)

    def compose(self) -> ComposeResult:
        yield Static(id="rss-figures")
        with Horizontal(id="rss-curve"):
            yield Static(id="rss-range")
            yield Sparkline([], id="rss-sparkline")
            yield Static(id="rss-span")

    def on_mount(self) -> None:
        self.follow_theme()

    def redraw(self) -> None:
        self.watch_figures(self.figures)

    def watch_figures(self, figures: RssFigures) -> None:
        palette = self.palette
        self.query_one("#rss-figures", Static).update(figures_text(figures, palette))
        samples = figures.samples
        self.query_one("#rss-curve").display = len(samples) > 1
        if len(samples) <= 1:
            return
        low, high = curve_range(samples)
        self.query_one("#rss-range", Static).update(Text(low + "–" + high + " ", style="dim"))
        span = Text(f" 0–{samples[-1][0]:.1f} s", style="dim")
        if figures.rss is None and figures.pending:  # the live figure, beside its curve
            span.append(f"  now {format_bytes(samples[-1][1])}", style=f"bold {palette.memory}")
        elif figures.rss is not None:
            # Beside the kernel's figure, the curve is told apart from it on its own
            # line: said on the figures' line, this pushed that line to wrap, and the
            # panel's height left no line for the curve it named.
            span.append(f"  {CURVE_LABEL}", style="dim")
        self.query_one("#rss-span", Static).update(span)
        sparkline = self.query_one("#rss-sparkline", Sparkline)
        sparkline.data = [float(value) for _, value in samples]
        sparkline.tooltip = "sampled RSS (approximate, /proc); the peak above is the kernel's"


def curve_range(samples: tuple) -> tuple[str, str]:
    """The sparkline's axis: its lowest and highest sample (the bars span that range)."""
    values = [value for _, value in samples]
    return format_bytes(min(values)), format_bytes(max(values))
