"""A multi-rank session in the app: the straggler in the header, every rank's figure in
a row's detail (built from recorded rows: no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay import make_row

from torchscan_tui.formats.ranks import multi_rank_report
from torchscan_tui.formats.report import new_report
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.detail_pane import DetailPane

from .conftest import wait_for_run


def _session():
    per_rank = {
        0: [make_row("aten::mm", [[2]], 1, 0.001), make_row("gloo:all_reduce", [[2]], 1, 0.009)],
        1: [make_row("aten::mm", [[2]], 1, 0.009), make_row("gloo:all_reduce", [[2]], 1, 0.001)],
    }
    return multi_rank_report(
        {
            rank: (Path(f"rank-{rank}.json"), new_report(operators=rows))
            for rank, rows in per_rank.items()
        }  # fmt: skip
    )


async def test_the_header_names_the_straggler_and_a_row_every_rank():
    app = create_app(report=_session(), report_path="ranks/", show_clock=False)
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for_run(pilot)
        header = str(app.query_one("#run-header").render())
        assert "2 ranks: rank 1 is 800% slower than the other ranks' median" in header
        names = [row["operator"] for row in app.main_screen.view.rows]
        assert names == ["aten::mm", "gloo:all_reduce"]  # spread 8 ms both: then by name
        app.main_screen.table.cursor = names.index("aten::mm")
        await pilot.press("enter")
        await pilot.pause()
        detail = str(app.query_one(DetailPane).query_one("#detail-body").render())
        assert "CPU self by rank" in detail and "slowest rank 1" in detail
        assert "rank 0 1.000 ms, rank 1 9.000 ms" in detail


@pytest.mark.slow
async def test_r_shows_one_ranks_rows_and_back_and_a_save_keeps_the_session(tmp_path):
    from textual.widgets import Input, OptionList

    from torchscan_tui.formats.report import load_report
    from torchscan_tui.ui.screens.rank_screen import RankScreen

    app = create_app(report=_session(), report_path="ranks/", show_clock=False)
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for_run(pilot)
        screen = app.main_screen
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, RankScreen)
        app.screen.query_one(OptionList).highlighted = 2  # all ranks, rank 0, rank 1
        await pilot.press("enter")
        await pilot.pause()
        assert screen.shown_rank == 1
        assert [row["cpu_self_seconds"] for row in screen.view.rows] == [0.009, 0.001]
        assert "rank 1 of 2 (R: others)" in str(app.query_one("#run-header").render())
        await pilot.press("w")
        app.screen.query_one("#export-path", Input).value = str(tmp_path / "s.json")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.press("R")
        await pilot.pause()
        app.screen.query_one(OptionList).highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert screen.shown_rank is None and "ranks" in screen.view.rows[0]
    saved = load_report(tmp_path / "s.json")
    assert all("ranks" in row for row in saved["operators"])  # the session, not rank 1's
    assert len(saved["ranks"]["per_rank"]) == 2


async def test_a_jobs_rank_rows_stream_in_tagged_then_the_cross_rank_rows_replace_them(until):
    """Issue 19, 1: while a torchrun job runs each rank's rows show as they come, marked
    with their rank; once every rank is done the cross-rank rows take their place."""
    import threading

    from replay import ReplaySource

    from torchscan_tui.run.events import (
        PhaseChanged,
        ProfileMeta,
        RowsReceived,
        RowsReplaced,
        RunFinished,
    )

    session = _session()
    own = [{**make_row("aten::mm", [[2]], 1, 0.001), "rank": 0},
           {**make_row("aten::mm", [[2]], 1, 0.009), "rank": 1}]  # fmt: skip
    events = [
        PhaseChanged("profiling"),
        ProfileMeta({"context": {"ranks": 2, "ranks_streaming": True}}),
        RowsReceived(own[:1]),
        RowsReceived(own[1:]),
        ProfileMeta({"context": session["context"]}),
        RowsReplaced(session["operators"]),
        RunFinished("done", "2 ranks", session, True),
    ]

    class HeldWhileRanksRun(ReplaySource):
        """Holds after the ranks' own rows, before the job's end (the cross-rank rows)."""

        def run(self, emit):
            for event in self.events[:4]:
                emit(event)
            self.holding.set()
            self.hold.wait(30)
            for event in self.events[4:]:
                emit(event)

    source = HeldWhileRanksRun(events, hold=threading.Event())
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.main_screen
        await until(pilot, lambda: source.holding.is_set() and not screen.pump)
        lines = [str(screen.table.render_line(y).text) for y in (1, 2)]
        assert "r0 aten::mm" in lines[0] and "r1 aten::mm" in lines[1]
        header = str(app.query_one("#run-header").render())
        assert "each rank's rows as it sends them" in header
        source.hold.set()
        await wait_for_run(pilot)
        assert [row["operator"] for row in screen.view.rows] == ["aten::mm", "gloo:all_reduce"]
        assert "rank 1 is 800% slower" in str(app.query_one("#run-header").render())


async def _first_rows_detail(session) -> str:
    """The detail pane's text for the first row of ``session`` (enter on it)."""
    app = create_app(report=session, report_path="ranks/", show_clock=False)
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for_run(pilot)
        await pilot.press("enter")
        await pilot.pause()
        return str(app.query_one(DetailPane).query_one("#detail-body").render())


async def test_a_row_every_rank_took_alike_names_no_slowest_rank():
    """Where every rank took the same, the detail named one of them "slowest rank" (the
    first of a tie): it now says every rank took the same."""
    rows = [make_row("aten::mm", [[2]], 1, 0.004)]
    session = multi_rank_report(
        {rank: (Path(f"rank-{rank}.json"), new_report(operators=rows)) for rank in (0, 1)}
    )
    detail = await _first_rows_detail(session)
    assert "spread 0.0 µs, every rank the same (rank 0 4.000 ms, rank 1 4.000 ms)" in detail
    assert "slowest rank" not in detail
    one = multi_rank_report({1: (Path("rank-1.json"), new_report(operators=rows))})
    assert "spread 0.0 µs, one rank (rank 1 4.000 ms)" in await _first_rows_detail(one)
