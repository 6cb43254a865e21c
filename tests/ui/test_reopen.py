"""Save a session with w, reopen it without torch, and export: the same rows come out."""

from __future__ import annotations

import csv
import gc
import threading
from pathlib import Path

import pytest
from replay import make_row, replay_source
from textual.widgets import Button, Input

from torchscan_tui.common import startup
from torchscan_tui.formats.opening import open_profile, open_profile_paged
from torchscan_tui.formats.report import SCHEMA_NAME, SCHEMA_VERSION, load_report, save_report
from torchscan_tui.run.sources import ReportSource
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.operator_table import OperatorTable


async def export_all(app, pilot, path):
    await pilot.press("a", "e")
    app.screen.query_one("#export-path", Input).value = str(path)
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


def saved_big_report(folder, count: int, first_page: int = 100):
    """A report of ``count`` numbered rows saved in ``folder``, reopened with only its
    first page decoded: (the rows, the opened report, its path, its pending rows)."""
    rows = [make_row(f"op{i:05}", [[i, 3]], 1, 0.001) for i in range(count)]
    report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": rows,
        "context": {"device": "cpu", "total_grouped_operators": count},
        "diagnostics": [],
        "totals": {},
    }
    save_report(report, folder / "big.json")
    return rows, *open_profile_paged(folder / "big.json", first_page=first_page)[:3]


@pytest.mark.slow
async def test_save_reopen_export_round_trip(wait, tmp_path):
    app = create_app(source=replay_source(), show_clock=False)
    saved = tmp_path / "my session.json"
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        await export_all(app, pilot, tmp_path / "live.csv")
        await pilot.press("w")
        assert app.screen.query_one("#export-ok", Button).label.plain == "Save"
        app.screen.query_one("#export-path", Input).value = str(saved)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert f"reopen it with: torchscan-tui '{saved}'" in said[-1]

    report, source = open_profile(saved)
    reopened = create_app(report=report, report_path=source, show_clock=False)
    async with reopened.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert (
            reopened.main_screen.check_action("rerun", ()) is False
        )  # nothing to rerun from a file
        await pilot.press("l")  # nor any workload output to show
        assert not reopened.query_one("#log-pane").display
        assert reopened.main_screen.state.rss["value"] == 300 * 2**20
        await pilot.press("slash", *"mm", "escape", "c")
        assert len(reopened.main_screen.view.visible) == 3
        await pilot.press("slash")
        reopened.query_one("#filter-input", Input).value = ""
        await pilot.press("escape")
        await export_all(reopened, pilot, tmp_path / "reopened.csv")

    live = list(csv.DictReader((tmp_path / "live.csv").open()))
    again = list(csv.DictReader((tmp_path / "reopened.csv").open()))
    key = lambda row: (row["operator"], row["input_shapes"])  # noqa: E731
    assert sorted(live, key=key) == sorted(again, key=key)
    assert len(live) == 8


@pytest.mark.slow
async def test_a_big_report_shows_its_first_page_then_every_row(wait, tmp_path):
    """Only the first page is decoded before the app starts; the app decodes the rest
    (in slices, between frames) and ends with every row, in rank order, in its view and
    in the report that w saves."""
    rows, opened, source, pending = saved_big_report(tmp_path, 3000)
    assert len(opened["operators"]) == 100 and len(pending) == 2900
    app = create_app(report=opened, report_path=source, pending_rows=pending, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert [row["operator"] for row in app.main_screen.view.rows] == [
            row["operator"] for row in rows
        ]
        assert "3,000 of 3,000" in str(app.query_one("#status-bar").render())
        assert app.main_screen.state.message == "3000 rows from a saved report"
        saved = tmp_path / "again.json"
        await pilot.press("w")
        app.screen.query_one("#export-path", Input).value = str(saved)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
    assert load_report(saved)["operators"] == rows


class HeldReportSource(ReportSource):
    """A reopened report whose thread (the undecoded rows, the end) waits to be let go."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    def run(self, emit):
        self.release.wait(10)
        super().run(emit)


async def test_a_reopened_report_paints_its_first_rows_without_its_thread(wait, until, tmp_path):
    """The decoded first page is applied before the first frame, not handed over by the
    source's thread a drain tick later: with that thread held, the rows are on screen."""
    _, opened, path, pending = saved_big_report(tmp_path, 300)
    source = HeldReportSource(opened, path, pending)
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(OperatorTable)
        await until(pilot, lambda: "op0000" in table.render_line(1).text)
        assert len(app.main_screen.view.visible) == 100
        source.release.set()
        await wait(pilot)
        assert len(app.main_screen.view.visible) == 300
        assert app.main_screen.state.message == "300 rows from a saved report"


@pytest.mark.slow
async def test_leaving_while_rows_still_decode_is_quiet(until, tmp_path):
    """The app torn down mid-load (as run_test and a closing terminal do): the decode
    ticks still pending find no widgets and stop, instead of raising NoMatches."""
    rows, opened, path, pending = saved_big_report(tmp_path, 50_000)
    app = create_app(report=opened, report_path=path, pending_rows=pending, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        # past the settle (0.4 s): parts decode, a slice at a time
        await until(pilot, lambda: len(app.main_screen.view.rows) > 100, idle=False)
        assert len(app.main_screen.view.rows) < len(rows)


async def test_a_report_damaged_past_its_first_page_shows_that_page_as_incomplete(wait, tmp_path):
    """Rows damaged after the first page are found once it is on screen: the app keeps
    the rows it could read, says which file is damaged and what to do, and a report
    saved from it says it is incomplete."""
    rows, *_ = saved_big_report(tmp_path, 3000)
    path = tmp_path / "big.json"
    path.write_bytes(path.read_bytes().replace(b'"op02000"', b'"op02000', 1))
    opened, source, pending, _ = open_profile_paged(path, first_page=100)
    app = create_app(report=opened, report_path=source, pending_rows=pending, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert [row["operator"] for row in app.main_screen.view.rows] == [
            r["operator"] for r in rows[:100]
        ]
        assert app.main_screen.state.complete is False
        assert "done, incomplete" in str(app.query_one("#run-header").render())
        assert (
            str(path) in app.main_screen.state.message
            and "damaged" in app.main_screen.state.message
        )
        assert app.main_screen.state.report["run"]["complete"] is False
        assert len(app.main_screen.state.report["operators"]) == 100


async def test_a_trace_cut_short_opens_marked_incomplete_and_says_why(wait, tmp_path):
    trace = (Path(__file__).parent.parent / "data" / "cpu_trace.json").read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(trace[: len(trace) * 3 // 4])
    opened, source, pending, _ = open_profile_paged(path)
    app = create_app(report=opened, report_path=source, pending_rows=pending, show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        assert app.main_screen.view.rows and app.main_screen.state.complete is False
        assert "done, incomplete" in str(app.query_one("#run-header").render())
        said = {n.title: n.message for n in app._notifications}
        assert "is cut short" in said["Incomplete"] and str(path) in said["Incomplete"]
        await pilot.press("enter")  # the detail pane lists the diagnostic too
        assert "trace_truncated" in str(app.query_one("#detail-body").render())


async def test_a_row_of_the_wrong_type_past_the_first_page_keeps_the_rows_before_it(wait, tmp_path):
    """Valid JSON, wrong type (issue 16, point 3): the app must not crash far from the
    cause when that row's part is decoded; it keeps the rows decoded before it and names
    the row and field."""
    rows, *_ = saved_big_report(tmp_path, 3000)
    path = tmp_path / "big.json"
    text = path.read_bytes().replace(
        b'"op02500", "input_shapes": [[2500, 3]], "kind": "operator", "calls": 1',
        b'"op02500", "input_shapes": [[2500, 3]], "kind": "operator", "calls": "many"',
        1,
    )  # noqa: E501
    assert b'"many"' in text
    path.write_bytes(text)
    opened, source, pending, _ = open_profile_paged(path, first_page=100)
    app = create_app(report=opened, report_path=source, pending_rows=pending, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert app.main_screen.state.complete is False
        assert "row 2501: calls: Expected `int`, got `str`" in app.main_screen.state.message
        assert str(path) in app.main_screen.state.message
        shown = [row["operator"] for row in app.main_screen.view.rows]
        assert shown == [r["operator"] for r in rows[: len(shown)]] and 100 <= len(shown) <= 2500


async def test_keys_that_do_not_apply_to_a_reopened_report_say_why(tmp_path, wait):
    """Issue 20, bug 5: in a reopened report t, r and l did nothing and said nothing."""
    report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": [make_row("aten::mm", [[2, 2]], 1, 0.001)],
        "context": {"device": "cpu"},
        "diagnostics": [],
        "totals": {},
        "trace_path": str(tmp_path / "gone" / "trace.json"),
    }
    app = create_app(report=report, report_path="r.json", show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        for key in ("t", "r", "l"):
            action = {"t": "export_trace", "r": "rerun", "l": "toggle_log"}[key]
            assert app.main_screen.check_action(action, ()) is False
        await pilot.press("t", "r", "l")
        said = " ".join(notice.message for notice in app._notifications)
        assert "this report names a trace at" in said and "never copied" in said
        assert "no workload to run again" in said
        assert "no workload output to show" in said


async def test_the_app_resumes_a_paused_collector_after_its_first_frame(wait, tmp_path):
    """Started by the command, the app runs with the collector paused until its first
    frame is painted (common/startup.py); then it is back on, start-up frozen."""
    _, opened, path, pending = saved_big_report(tmp_path, 300)
    enabled = gc.isenabled()
    try:
        gc.enable()
        startup.pause_for_start()
        app = create_app(report=opened, report_path=path, pending_rows=pending, show_clock=False)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait(pilot)
            assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        startup.started()
        gc.unfreeze()
        (gc.enable if enabled else gc.disable)()
