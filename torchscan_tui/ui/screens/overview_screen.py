"""``o``: the step overview. Each profiled step's time as a stacked bar, the shares over
the window, and the recommendations with the figures behind them.

The figures are the report's ``overview`` (see :mod:`torchscan_tui.analysis.overview`);
this screen only draws them. Each category is one letter in the bars (so the split reads
without colour, over SSH too) as well as one colour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding

from torchscan_tui.analysis.overview import (
    CATEGORIES,
    LABELS,
    device_timeline_line,
    overview_source,
)
from torchscan_tui.common.formatting import format_seconds
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.screens.dialog import DrawnDialog

MARKS = {"kernel": "K", "memcpy": "C", "memset": "S", "communication": "N", "runtime": "R",
         "dataloader": "D", "cpu": "H", "other": "·"}  # fmt: skip
STYLES = {"kernel": "green", "memcpy": "magenta", "memset": "magenta", "communication": "blue",
          "runtime": "yellow", "dataloader": "red", "cpu": "cyan", "other": "dim"}  # fmt: skip
BAR_RESERVE = 28  # the step number, its time and the padding beside each bar


def stacked_bar(step: Mapping[str, Any], longest: float, width: int) -> Text:
    """One step as marks in proportion to each category's time (the longest step fills
    ``width``); a category shorter than a cell still shows one mark when it is 5%."""
    bar = Text()
    if longest <= 0:
        return bar
    cells = max(int(round(step["seconds"] / longest * width)), 1)
    for name in CATEGORIES:
        seconds = step.get(name) or 0.0
        share = seconds / step["seconds"] if step["seconds"] else 0.0
        count = int(round(share * cells)) or (1 if share >= 0.05 else 0)
        bar.append(MARKS[name] * count, style=STYLES[name])
    return bar


def legend_lines(entries: list[Text], width: int, gap: int = 3) -> Text:
    """The entries in lines of at most ``width`` cells, each entry whole on one line:
    wrapped by words, "N communication" and its "0%" were split across two lines."""
    legend, used = Text(), 0
    for entry in entries:
        if used and used + gap + entry.cell_len > width:
            legend.append("\n")
            used = 0
        elif used:
            legend.append(" " * gap)
            used += gap
        legend.append_text(entry)
        used += entry.cell_len
    return legend


def draw_overview(overview: Mapping[str, Any], width: int) -> RenderableType:
    """The steps as bars, the legend with the shares, where the steps came from, the
    device timeline's breakdown (HTA's) and the recommendations."""
    steps = overview.get("steps") or []
    longest = max((step["seconds"] for step in steps), default=0.0)
    bars = Table.grid(padding=(0, 1))
    bars.add_column(justify="right", style="bold")
    bars.add_column(justify="right")
    bars.add_column()
    for step in steps:
        bars.add_row(
            literal(f"step {step.get('name', '?')}"),
            format_seconds(step["seconds"]),
            stacked_bar(step, longest, max(width - BAR_RESERVE, 10)),
        )
    entries = []
    for name in CATEGORIES:
        share = (overview.get("shares") or {}).get(name)
        entry = Text()
        entry.append(f"{MARKS[name]} ", style=f"bold {STYLES[name]}")
        entry.append(f"{LABELS[name]} ")
        entry.append("—" if share is None else f"{share:.0%}", style="bold")
        entries.append(entry)
    legend = legend_lines(entries, width)
    about = [Text(f"steps: {overview_source(overview)}", style="dim")]
    device = device_timeline_line(overview.get("device_timeline"))
    if device:
        about.append(Text(device))
    advice = [Text("\nWhat to try", style="bold")]
    for item in overview.get("recommendations") or []:
        line = literal(f"• {item['text']}")
        line.append(f"\n  because {item['because']}", style="dim")
        advice.append(line)
    if len(advice) == 1:
        advice.append(Text("Nothing stands out in these shares.", style="dim"))
    return Group(bars, Text(""), legend, *about, *advice)


class OverviewScreen(DrawnDialog):
    BINDINGS = [Binding("escape,q,o", "dismiss", "Close", tooltip="Back to the operators")]

    def __init__(self, overview: Mapping[str, Any], title: str | Sequence[str]):
        super().__init__(title)
        self.overview = overview

    def draw(self, width: int) -> RenderableType:
        return draw_overview(self.overview, width)
