"""``R``: the ranks of a multi-rank session, to choose whose rows the table shows.

The first entry is the cross-rank view (every rank, the median rank's figures, the
widest spread first); then one entry per rank with its host side (CPU self time of
compute and collectives), its device side (HTA's breakdown of its device timeline, when
it ran device work), its median step and peak RSS. Dismissed with the choice: None for
the cross-rank view, else the rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from torchscan_tui.analysis.records import RankSummary
from torchscan_tui.common.formatting import counted, format_bytes, format_seconds
from torchscan_tui.ui.literal import literal
from torchscan_tui.ui.palette import palette_of
from torchscan_tui.ui.screens.dialog import Dialog

CROSS_RANK_ID = "all"


def describe_rank(summary: Mapping[str, Any]) -> str:
    """One rank in a line: its host side (CPU self time of its ops), its device side
    (HTA's breakdown of its device timeline) when it ran device work, step and RSS."""
    rss = summary.get("peak_rss")
    step = summary.get("step_seconds_median")
    line = (
        f"rank {summary['rank']}: host compute {format_seconds(summary['host_compute_seconds'])}"
        f", host collectives {format_seconds(summary['host_collective_seconds'])} (CPU self)"
    )
    device = summary.get("device_timeline")
    if device:
        overlap = device.get("comm_comp_overlap")
        line += (
            f"; device compute {device['compute_share']:.0%}, non-compute "
            f"{device['non_compute_share']:.0%}, idle {device['idle_share']:.0%} of "
            f"{format_seconds(device['span_seconds'])}"
            + (f", comm/compute overlap {overlap:.0%}" if overlap is not None else "")
        )
    return line + (
        f"; step {format_seconds(step) if step is not None else '—'} (median), "
        f"{summary['rows']:,} rows, peak RSS {format_bytes(rss) if rss else '—'}"
    )


class RankScreen(Dialog[object]):
    BINDINGS = [Binding("escape,q,R", "close", "Back", tooltip="Keep the current view")]

    def __init__(self, per_rank: Sequence[RankSummary], straggler: list[str], current: int | None):
        super().__init__()
        self.per_rank = per_rank
        self.straggler = straggler  # the verdict's line, and HTA's evidence if any
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="chart-dialog", classes="dialog-box"):
            yield Label(literal(f"{counted(len(self.per_rank), 'rank')}: pick whose rows to "
                                "show (enter)", "bold"))  # fmt: skip
            for line in self.straggler:  # full width: the verdict wraps, never cut
                yield Static(literal(line, palette_of(self.app).warning))
            options = [Option("all ranks: cross-rank rows, widest spread first", CROSS_RANK_ID)]
            options += [
                Option(literal(describe_rank(summary)), str(summary["rank"]))
                for summary in self.per_rank
            ]
            yield OptionList(*options, id="rank-list")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        ids = [CROSS_RANK_ID] + [str(summary["rank"]) for summary in self.per_rank]
        current = CROSS_RANK_ID if self.current is None else str(self.current)
        listing.highlighted = ids.index(current) if current in ids else 0
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        chosen = event.option.id
        self.dismiss(("rank", None if chosen == CROSS_RANK_ID else int(chosen or 0)))

    def action_close(self) -> None:
        self.dismiss(None)
