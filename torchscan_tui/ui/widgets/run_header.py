"""The top line: script, a spinner, the phase of the run, elapsed time, device, and the
ranks, steps and self-time sums."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.reactive import reactive

from torchscan_tui.analysis.step_summary import step_line
from torchscan_tui.common.formatting import counted, format_seconds
from torchscan_tui.common.text import neutralise_controls
from torchscan_tui.run.phases import PHASE_WORDS
from torchscan_tui.ui.palette import ANSI, Palette, ThemedWidget
from torchscan_tui.ui.widgets.one_line import OneLine

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# Each outcome's role in the palette; a running phase is the accent.
PHASE_ROLES = {"done": "success", "failed": "error", "cancelled": "warning"}


@dataclass(frozen=True)
class Heading:
    """What the header says. ``incomplete``: the run or file ended without all its rows
    (the notice said why); ``totals``: the sums of self time, last (a narrow terminal
    cuts them first); ``tick`` turns the spinner while ``running``."""

    title: str = ""
    device: str = ""
    phase: str = "starting"
    phase_label: str = ""  # what to say of the phase (step k of n); "" for its plain label
    elapsed: float | None = None
    running: bool = False
    tick: int = 0
    incomplete: bool = False
    totals: str = ""


def totals_line(context: Mapping[str, Any], shown_rank: int | None = None) -> str:
    """The header's last part: the ranks and whose rows show, the profiled steps, and the
    sums of self time (a narrow terminal cuts them first)."""
    parts = (_ranks_line(context, shown_rank), step_line(context), _self_time_totals(context))
    return "  ".join(part for part in parts if part)


def heading_text(heading: Heading, palette: Palette = ANSI) -> Text:
    """Where the run is comes first after its name: at 80 columns a trace's device
    words ("cuda, 603.558 ms device time (100.0% attributed to operators)") had pushed
    "done", a failure, or the spinner off the line."""
    text = Text()
    text.append(" torchscan-tui ", style="bold reverse")
    text.append(f" {neutralise_controls(heading.title)}  ", style="bold")
    phase = heading.phase
    label = heading.phase_label or PHASE_WORDS.get(phase, phase)
    if heading.running:
        text.append(SPINNER[heading.tick % len(SPINNER)] + " ", style=f"bold {palette.accent}")
    if heading.incomplete:
        text.append(f"{label}, incomplete", style=f"bold {palette.warning}")
    else:
        text.append(label, style=f"bold {getattr(palette, PHASE_ROLES.get(phase, 'accent'))}")
    if heading.elapsed is not None:
        text.append(f"  {heading.elapsed:.1f} s", style="dim")
    text.append(f"  device {neutralise_controls(heading.device)}", style="dim")
    if heading.totals:
        text.append(f"  {heading.totals}", style="dim")
    return text


class RunHeader(ThemedWidget, OneLine):
    """Attributes down: the screen sets :attr:`heading`; the line follows."""

    heading: reactive[Heading] = reactive(Heading, layout=False, repaint=False)

    def on_mount(self) -> None:
        self.follow_theme()

    def watch_heading(self, heading: Heading) -> None:
        self.show_text(heading_text(heading, self.palette))

    def redraw(self) -> None:
        self.watch_heading(self.heading)


def _self_time_totals(context: Mapping[str, Any]) -> str:
    """``Σ CPU self 12.345 ms  Σ device self 3.210 ms``: sums over every row, the shares'
    denominators, never a latency (device only where it was measured)."""
    parts = []
    for field, label in (("cpu_self_seconds_sum", "CPU"), ("device_self_seconds_sum", "device")):
        total = context.get(field)
        if total is not None:
            parts.append(f"Σ {label} self {format_seconds(total)}")
    return "  ".join(parts)


def _ranks_line(context: Mapping[str, Any], shown: int | None) -> str:
    """``2 ranks: rank 1 is 85% slower ...`` in a multi-rank session, and whose rows show."""
    ranks = context.get("ranks")
    if not ranks:
        return ""
    if context.get("ranks_streaming"):
        return (
            f"{ranks} ranks: each rank's rows as it sends them (r0, r1, ...), the "
            "cross-rank view once every rank is done"
        )
    # one rank: a node's share of a job across nodes
    line = counted(ranks, "rank") if shown is None else f"rank {shown} of {ranks} (R: others)"
    straggler = context.get("straggler")
    return f"{line}: {straggler}" if straggler else line
