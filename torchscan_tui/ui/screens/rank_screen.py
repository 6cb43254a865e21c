"""``R``: the ranks of a multi-rank session, to choose whose rows the table shows.

The first entry is the cross-rank view (every rank, the median rank's figures, the
widest spread first); then one entry per rank with its compute, collective time and
peak RSS. Dismissed with the choice: None for the cross-rank view, else the rank.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from torchscan_tui.common.formatting import format_bytes, format_seconds
from torchscan_tui.ui.literal import literal

CROSS_RANK_ID = "all"


def describe_rank(summary: dict) -> str:
    rss = summary.get("peak_rss")
    step = summary.get("step_seconds_median")
    return (
        f"rank {summary['rank']}: compute {format_seconds(summary['compute_seconds'])}, "
        f"collectives {format_seconds(summary['collective_seconds'])}, "
        f"step {format_seconds(step) if step is not None else '—'} (median), "
        f"{summary['rows']:,} rows, peak RSS {format_bytes(rss) if rss else '—'}"
    )


class RankScreen(ModalScreen[object]):
    BINDINGS = [Binding("escape,q,R", "close", "Back", tooltip="Keep the current view")]

    def __init__(self, per_rank: list[dict], straggler: str | None, current: int | None):
        super().__init__()
        self.per_rank = per_rank
        self.straggler = straggler
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="chart-dialog"):
            yield Label(literal(f"{len(self.per_rank)} ranks: pick whose rows to show (enter)",
                                "bold"))  # fmt: skip
            if self.straggler:
                yield Label(literal(f"straggler: {self.straggler}", "yellow"))
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
