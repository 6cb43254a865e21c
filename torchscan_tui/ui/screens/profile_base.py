"""What every part of the profile screen shares: the run's driver, the row view, the rank
shown, the last result; the screen's parts (the views it opens, its exports) build on it.

:class:`~torchscan_tui.ui.screens.profile_screen.ProfileScreen` runs and renders;
:mod:`.profile_views` opens the chart, kernel, step and rank views;
:mod:`.profile_exports` exports rows, the trace and the session. Each reads the run
through this base, so none reaches into another.
"""

from __future__ import annotations

from torchscan_tui.analysis.records import RankSummary
from torchscan_tui.analysis.row_view import RowView
from torchscan_tui.run.sources import RunSource
from torchscan_tui.ui.event_pump import EventPump
from torchscan_tui.ui.last_result import LastResult
from torchscan_tui.ui.rank_selection import RankSelection
from torchscan_tui.ui.run_driver import RunDriver
from torchscan_tui.ui.run_state import RunState
from torchscan_tui.ui.screens.rows_screen import RowsScreen


class ProfileBase(RowsScreen):
    """The run (its driver), the rows (the view), whose rows show, what ``r`` keeps."""

    def __init__(self, source: RunSource) -> None:
        super().__init__()
        self.driver = RunDriver(source)
        self.view = RowView()
        self.ranks = RankSelection()  # in a multi-rank session: whose rows show
        self.last_result = LastResult()  # what r keeps on screen, dimmed, until rows come
        self.status_message = ""  # said in the status line until the next change

    @property
    def source(self) -> RunSource:
        return self.driver.source

    @property
    def state(self) -> RunState:
        return self.driver.state

    @property
    def pump(self) -> EventPump:
        return self.driver.pump

    @property
    def run_finished_count(self) -> int:
        """How many runs have ended on screen (tests wait on it)."""
        return self.driver.finished_count

    @property
    def shown_rank(self) -> int | None:
        """The rank whose own rows show (None: every rank's, or a one-rank session)."""
        return self.ranks.shown

    def per_rank(self) -> list[RankSummary]:
        """Every rank's summary and rows, in a multi-rank session; [] in any other."""
        report = self.state.report or {}
        return list((report.get("ranks") or {}).get("per_rank") or [])

    def render_all(self, rows_replaced: bool = False) -> None:
        """Every widget from the state (the screen's own)."""
        raise NotImplementedError
