"""Whose rows a multi-rank session's table shows: one rank's own, or every rank's (pure).

A session of several ranks has the cross-rank rows (each the median rank's figures) and
each rank's own rows (its ``ranks.per_rank`` entry). ``R`` switches between them; the
cross-rank rows are kept aside while a rank's are shown, for switching back and for
saving the session (a saved report holds the cross-rank rows, whichever is shown).
"""

from __future__ import annotations

from collections.abc import Sequence

from torchscan_tui.analysis.records import RankSummary, Row


class RankSelection:
    """The rank shown (None: the cross-rank rows) and the cross-rank rows set aside."""

    def __init__(self) -> None:
        self.shown: int | None = None
        self._cross_rank: list[Row] = []

    def reset(self) -> None:
        """A new run: its rows are its own, no rank is chosen."""
        self.shown = None
        self._cross_rank = []

    def choose(
        self, rank: int | None, showing: list[Row], per_rank: Sequence[RankSummary]
    ) -> list[Row] | None:
        """The rows to show for ``rank`` (None: the cross-rank rows), ``showing`` being
        what the table holds now; None when the session has no such rank."""
        by_rank = {summary["rank"]: summary for summary in per_rank}
        if rank is not None and rank not in by_rank:
            return None
        if self.shown is None:
            self._cross_rank = showing  # the cross-rank rows, all of them
        self.shown = rank
        return self._cross_rank if rank is None else by_rank[rank]["operators"]

    def session_rows(self, showing: list[Row]) -> list[Row]:
        """The rows the session's report holds: the cross-rank ones, whoever is shown."""
        return showing if self.shown is None else self._cross_rank

    def described(self) -> str:
        """What the table shows now, in words (the notice after a switch)."""
        if self.shown is None:
            return "the cross-rank rows (the median rank's figures)"
        return f"rank {self.shown}'s own rows"
