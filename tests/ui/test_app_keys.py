"""Every key of the app, against the real app fed by a recorded event stream."""

from __future__ import annotations

import csv
import json
import threading

import pytest
from replay import ReplaySource, make_row, recorded_events, replay_source, sample_rows
from textual import events
from textual.widgets import Footer, Input

from torchscan_tui.run.events import (
    PhaseChanged,
    ProfileMeta,
    RowsReceived,
    RssSampled,
    RunFinished,
)
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.export_dialog import ExportDialog
from torchscan_tui.ui.screens.help_screen import HelpScreen
from torchscan_tui.ui.widgets.detail_pane import DetailPane
from torchscan_tui.ui.widgets.filter_bar import ERROR_DELAY_S
from torchscan_tui.ui.widgets.log_pane import LogPane
from torchscan_tui.ui.widgets.operator_table import OperatorTable
from torchscan_tui.ui.widgets.status_bar import StatusBar


def visible_names(app):
    return [app.main_screen.view.rows[i]["operator"] for i in app.main_screen.view.visible]


def style_of(strip):
    return next(iter(strip)).style


def status_text(app):
    return str(app.query_one(StatusBar).render())


async def test_rows_stream_in_and_the_status_line_counts_them(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert app.main_screen.state.phase == "done"
        assert len(app.main_screen.view.visible) == 8
        text = status_text(app)
        assert "8 of 8 grouped operators" in text
        assert "limit none" in text and "sort rank" in text
        assert app.main_screen.state.rss["value"] == 300 * 2**20


def _short_of_the_total(row_limit=None, outcome="done"):
    """A run whose context counts 8 groups of which only the first 5 rows come."""
    events = recorded_events(outcome=outcome)
    for event in events:
        if isinstance(event, ProfileMeta):
            event.head["context"]["row_limit"] = row_limit
    return [e for e in events if not (isinstance(e, RowsReceived) and len(e.rows) == 3)]


async def test_the_status_line_tells_a_row_limit_from_rows_that_never_came(wait, held):
    """Rows short of the total are expected under a row limit (nothing is said), still
    coming while a run goes on ("so far"), and lost once it has ended without them."""
    hold = threading.Event()
    source = ReplaySource(_short_of_the_total(), hold=hold)
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await held(pilot, source)
        assert "5 of 8 grouped operators (5 received so far)" in status_text(app)
        hold.set()
        await wait(pilot)
        assert "5 of 8 grouped operators (only 5 received)" in status_text(app)
    limited = ReplaySource(_short_of_the_total(row_limit=5))
    app = create_app(source=limited, show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait(pilot)
        text = status_text(app)
        assert "5 of 8 grouped operators · sort" in text and "limit 5" in text


async def test_the_status_line_says_when_no_row_has_come(wait, held):
    """Before the profile begins there are no rows yet; a run that ends there has none."""
    hold = threading.Event()
    events = [
        e
        for e in recorded_events(outcome="cancelled")
        if not isinstance(e, (ProfileMeta, RowsReceived))
    ]
    source = ReplaySource(events, hold=hold)
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await held(pilot, source)
        assert status_text(app).startswith("no rows yet · sort rank")
        hold.set()
        await wait(pilot)
        assert status_text(app).startswith("no rows: the run ended before any came · sort")


@pytest.mark.slow
async def test_filter_by_shape_word_and_wildcard(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"[8, 16, 64]")
        assert visible_names(app) == ["aten::addmm", "aten::relu", "aten::sum"]
        await pilot.press(*" relu")
        assert visible_names(app) == ["aten::relu"]
        app.query_one("#filter-input", Input).value = "8x*"
        await pilot.pause()
        assert visible_names(app) == ["aten::mm"]
        app.query_one("#filter-input", Input).value = "[*, 64] mm"
        await pilot.pause()
        assert visible_names(app) == ["aten::addmm", "aten::mm", "aten::mm"]
        assert "filter “[*, 64] mm”" in status_text(app)
        await pilot.press("escape")
        assert app.focused is app.main_screen.table


@pytest.mark.slow
async def test_a_bad_filter_says_so_once_typing_pauses_and_hides_nothing(wait, until):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("slash", *"[8, x")
        error = app.query_one("#filter-error")
        assert not error.has_class("visible")  # not while the filter is being typed
        assert len(app.main_screen.view.visible) == 8
        await until(pilot, lambda: error.has_class("visible"))
        assert error.display and "showing all rows" in str(error.render())
        await pilot.press("]")
        await until(pilot, lambda: "is not a dimension" in str(error.render()))
        app.query_one("#filter-input", Input).value = "mm"
        await pilot.pause()
        assert not error.has_class("visible")


@pytest.mark.slow
async def test_an_unfinished_filter_finished_in_time_never_shows_an_error(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("slash", *"[8, *")
        await pilot.press("]")
        await pilot.pause(ERROR_DELAY_S * 2)
        assert not app.query_one("#filter-error").has_class("visible")
        assert visible_names(app) == ["aten::mm"]


async def test_sort_keys_and_flip(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("n")
        calls = [app.main_screen.view.rows[i]["calls"] for i in app.main_screen.view.visible]
        assert calls == sorted(calls, reverse=True)
        await pilot.press("n")
        assert [
            app.main_screen.view.rows[i]["calls"] for i in app.main_screen.view.visible
        ] == sorted(calls)
        await pilot.press("m")
        net = [app.main_screen.view.rows[i]["cpu_net_bytes"] for i in app.main_screen.view.visible]
        assert net == sorted(net, reverse=True)
        await pilot.press("c")
        cpu = [
            app.main_screen.view.rows[i]["cpu_self_seconds"] for i in app.main_screen.view.visible
        ]
        assert cpu == sorted(cpu, reverse=True)
        assert "sort CPU self ↓" in status_text(app)
        await pilot.press("c")
        assert "sort CPU self ↑" in status_text(app)


async def test_device_sort_without_device_time_says_why(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        before = list(app.main_screen.view.visible)
        await pilot.press("g")
        assert list(app.main_screen.view.visible) == before
        assert app.main_screen.view.sort.key == "rank"
        messages = [n.message for n in app._notifications]
        assert any("not measured" in message for message in messages)


async def test_device_sort_with_recorded_cuda_rows_mock_gpu(wait):
    source = ReplaySource(recorded_events(sample_rows(with_device=True), device="cuda"))
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("g")
        device = [
            app.main_screen.view.rows[i]["device_self_seconds"]
            for i in app.main_screen.view.visible
        ]
        assert device == sorted(device, reverse=True)
        assert visible_names(app)[0] == "aten::addmm"


@pytest.mark.slow
async def test_movement_keys(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        table = app.main_screen.table
        await pilot.press("down", "j")
        assert table.cursor == 2
        await pilot.press("up")
        assert table.cursor == 1
        await pilot.press("end")
        assert table.cursor == 7
        await pilot.press("home")
        assert table.cursor == 0
        await pilot.press("pagedown")
        assert table.cursor == 7
        await pilot.press("pageup", "up")
        assert table.cursor == 0


async def test_enter_opens_the_detail_pane_with_diagnostics(wait):
    note = {"code": "mps_cpu_dispatch_only", "message": "MPS rows describe CPU dispatch only"}
    app = create_app(source=replay_source(diagnostics=[note], device="mps"), show_clock=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot)
        pane = app.query_one(DetailPane)
        assert not pane.display
        await pilot.press("enter")
        assert pane.display
        body = str(pane.query_one("#detail-body").render())
        assert "aten::addmm" in body and "mps_cpu_dispatch_only" in body
        assert "forward ×12" in body and "not measured in this run" in body
        # Issue 20, 10: numbers, not only bars: the row's share and its time per call.
        (addmm,) = [row for row in app.main_screen.view.rows if row["operator"] == "aten::addmm"]
        total = app.main_screen.state.context["cpu_self_seconds_sum"]
        share = f"{100 * addmm['cpu_self_seconds'] / total:.1f}% of all rows"
        assert share in body and "per call" in body
        await pilot.press("down")
        assert "aten::mm" in str(pane.query_one("#detail-body").render())
        await pilot.press("escape")
        assert not pane.display


async def test_the_detail_pane_follows_the_cursor_within_the_move(wait):
    """The pane shows the new row as the cursor's move ends, not a frame after the table
    (a watcher sets it inside the move; the table's Highlighted message was handled after
    the table's own frame). Laid out again only when its height changes, its body still
    takes the height of each row's details, taller or shorter."""
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot)
        table, pane = app.main_screen.table, app.query_one(DetailPane)
        await pilot.press("enter")
        await pilot.pause()
        table.cursor = 1  # no await: no message has been handled since
        assert pane.detail is not None and pane.detail.row is table.highlighted_row
        body = pane.query_one("#detail-body")
        heights = []
        for position in [*range(len(table.view.visible)), 0]:
            table.cursor = position
            await pilot.pause()
            width = body.size.width
            heights.append(body.get_content_height(body.container_size, app.size, width))
            assert body.size.height == heights[-1]
        assert len(set(heights)) > 1  # rows whose details take more lines and fewer


@pytest.mark.slow
async def test_the_mouse_moves_opens_and_sorts_as_the_keys_do(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        table, pane = app.main_screen.table, app.query_one(DetailPane)
        await pilot.click(OperatorTable, offset=(10, 3))  # the third row
        assert table.cursor == 2 and not pane.display
        await pilot.double_click(OperatorTable, offset=(10, 2))
        assert table.cursor == 1 and pane.display
        header = str(table.render_line(0).text)
        calls_x = header.index("calls") + 1
        await pilot.click(OperatorTable, offset=(calls_x, 0))
        assert app.main_screen.view.sort.key == "calls" and app.main_screen.view.sort.descending
        counts = [app.main_screen.view.rows[i]["calls"] for i in app.main_screen.view.visible]
        assert counts == sorted(counts, reverse=True)
        await pilot.click(OperatorTable, offset=(calls_x, 0))  # again flips, as n does
        assert app.main_screen.view.sort.key == "calls" and not app.main_screen.view.sort.descending
        await pilot.click(OperatorTable, offset=(header.index("operator") + 1, 0))
        assert app.main_screen.view.sort.key == "calls"  # not a sortable column: nothing changes


@pytest.mark.slow
async def test_space_selects_and_a_selects_all_visible(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("space", "down", "space")
        assert app.main_screen.view.selected == {0, 1}
        assert "2 selected" in status_text(app)
        await pilot.press("space")
        assert app.main_screen.view.selected == {0}
        await pilot.press("slash", *"mm", "escape", "a")
        assert app.main_screen.view.selected == {0, 1, 5}


@pytest.mark.slow
async def test_export_selected_rows_to_csv_and_confirm_overwrite(wait, tmp_path):
    app = create_app(source=replay_source(), show_clock=False)
    target = tmp_path / "rows.csv"
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        await pilot.press("space", "down", "down", "space", "e")
        assert isinstance(app.screen, ExportDialog)
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = list(csv.DictReader(target.open()))
        assert [row["operator"] for row in rows] == ["aten::addmm", "aten::cat"]
        assert any(str(target) in n.message for n in app._notifications)
        # Again to the same path: the dialog asks before overwriting.
        await pilot.press("down", "e")
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        assert isinstance(app.screen, ExportDialog)
        assert "exists" in str(app.screen.query_one("#export-message").render())
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(list(csv.DictReader(target.open()))) == 2


@pytest.mark.slow
async def test_export_highlighted_row_as_markdown_and_json(wait, tmp_path):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        for name in ("one.md", "one.json"):
            await pilot.press("e")
            app.screen.query_one("#export-path", Input).value = str(tmp_path / name)
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert "| aten::addmm |" in (tmp_path / "one.md").read_text()
        assert json.loads((tmp_path / "one.json").read_text())[0]["calls"] == 12


async def test_export_dialog_refuses_unknown_extension_and_escape_cancels(wait, tmp_path):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("e")
        app.screen.query_one("#export-path", Input).value = str(tmp_path / "rows.xlsx")
        await pilot.press("enter")
        assert "unknown format .xlsx" in str(app.screen.query_one("#export-message").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, ExportDialog)
        assert list(tmp_path.iterdir()) == []


async def test_trace_export_shows_diagnostics_and_writes_0600(wait, tmp_path):
    trace = tmp_path / "private" / "trace.json"
    trace.parent.mkdir()
    trace.write_text('{"traceEvents": []}')
    note = {"code": "cuda_activity_unsupported", "message": "CUDA time is unavailable"}
    app = create_app(
        source=replay_source(trace_path=str(trace), diagnostics=[note]), show_clock=False
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("t")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        # The key's "why not" is said only when it does not apply (it was said here too).
        assert not [n for n in app._notifications if "No trace" in n.message]
        notes = " ".join(str(n.render()) for n in dialog.query(".export-note"))
        assert "cuda_activity_unsupported" in notes and "no device (GPU) activity" in notes
        assert "host name" in notes
        dialog.query_one("#export-path", Input).value = str(tmp_path / "out.json")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        out = tmp_path / "out.json"
        assert json.loads(out.read_text()) == {"traceEvents": []}
        assert out.stat().st_mode & 0o777 == 0o600


async def test_trace_export_is_unavailable_without_a_trace(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        assert app.main_screen.check_action("export_trace", ()) is False
        await pilot.press("t")
        assert not isinstance(app.screen, ExportDialog)
        (said,) = [n.message for n in app._notifications if "No trace" in n.message]
        assert said == "No trace to export: this run or file has no Chrome trace."


async def test_rerun_runs_the_source_again(wait):
    source = replay_source()
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("space", "r")
        await wait(pilot, runs=2)
        assert source.runs == 2
        assert len(app.main_screen.view.visible) == 8 and app.main_screen.view.selected == set()


async def test_cancel_while_running_reads_cancelled(wait):
    hold = threading.Event()
    app = create_app(source=replay_source(hold=hold), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        while len(app.main_screen.view.rows) < 8:
            await pilot.pause()
        assert app.main_screen.state.running and app.main_screen.check_action("cancel_run", ())
        assert app.main_screen.check_action("rerun", ()) is False
        await pilot.press("x")
        await wait(pilot)
        assert app.main_screen.state.phase == "cancelled"
        assert len(app.main_screen.view.rows) == 8  # what was shown stays
        # Issue 20, bug 2: "cancelling…" stayed in the status line forever.
        assert "cancelling" not in str(app.query_one(StatusBar).render())


async def test_quit_while_running_cancels_and_exits(wait, until):
    hold = threading.Event()
    source = replay_source(hold=hold)
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main_screen.view.rows)
        await pilot.press("q")
        await pilot.pause()
    assert source._cancelled.is_set()
    assert app.return_code == 0


async def test_failed_run_sets_a_non_zero_return_code(wait):
    app = create_app(source=replay_source(outcome="failed"), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        assert app.main_screen.state.phase == "failed"
        assert any("boom" in n.message for n in app._notifications)
        await pilot.press("q")
    assert app.return_code == 1


async def test_log_pane_toggles_and_holds_the_output(wait):
    app = create_app(source=replay_source(output=["line one", "\x1b[31mred"]), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        pane = app.query_one(LogPane)
        assert not pane.display
        await pilot.press("l")
        assert pane.display
        text = "\n".join(str(line.text) for line in pane.lines)
        assert "line one" in text and "\\x1b[31mred" in text
        assert "── run 1: the profile worker (torch.profiler) ──" in text
        assert "── run 2: the whole script, unprofiled, for peak RSS ──" in text
        assert text.index("run 1") < text.index("line one") < text.index("run 2")


@pytest.mark.slow
async def test_help_lists_every_key(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")  # htop's keys: F1 for help, F10 to quit
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "f10")
        await pilot.pause()
        assert not app.is_running  # left by F10


async def test_command_palette_offers_every_applicable_action(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for name in (
            "Filter",
            "CPU",
            "Device",
            "Calls",
            "Bytes",
            "Rank",
            "Select",
            "All",
            "Export",
            "Save",
            "Log",
            "Rerun",
            "Help",
            "Details",
        ):
            assert any(title.startswith(f"{name}: ") for title in titles), name
        assert not any(title.startswith("Cancel: ") for title in titles)  # nothing runs
        assert not any(title.startswith("Trace: ") for title in titles)  # no trace here
        # Issue 20, bug 9: Quit was listed twice, keys shown raw ("question_mark,f1").
        assert len([title for title in titles if title.startswith("Quit")]) == 1
        helps = [command.help for command in app.get_system_commands(app.screen)]
        assert not any("question_mark" in text or ",f1" in text for text in helps)
        assert "keys: ?, f1" in helps


async def test_painted_lines_follow_selection_and_cursor(wait):
    """Lines are cached per row and state: a selection or cursor move must still show."""
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        table = app.main_screen.table
        first = table.render_line(1)
        assert "●" not in first.text
        await pilot.press("space")
        assert table.render_line(1).text.startswith("●")
        assert style_of(table.render_line(1)) != style_of(table.render_line(2))  # the cursor
        await pilot.press("down")
        assert table.render_line(1).text.startswith("●")  # selected, no longer the cursor
        assert style_of(table.render_line(1)) != style_of(first)  # the selected style


@pytest.mark.slow
async def test_a_filter_longer_than_the_box_scrolls_to_the_cursor(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(60, 24)) as pilot:
        await wait(pilot)
        await pilot.press("slash", *("mm " * 30), "x")
        await pilot.pause()
        box = app.query_one("#filter-input", Input)
        assert box.cursor_position == 91 and box.scroll_x == box.max_scroll_x > 0
        assert box.render_line(0).text.rstrip().endswith("mm x")


async def test_the_table_follows_its_rows_and_resizes_its_scrollbar(wait):
    """The table's scrollable size follows the rows shown, set without a screen layout
    while the scrollbar stays (driven here through the view, as streaming rows and sort
    keys do, with no filter box change to cause a layout): the scroll position stays in
    range, the scrollbar's thumb follows, and the scrollbar goes and comes back when the
    rows fit or stop fitting."""
    rows = [make_row(f"op{index:03}", [[index % 7, 4]], 1, 0.001) for index in range(300)]
    rows[0]["kind"] = "annotation"
    app = create_app(source=replay_source(rows=rows), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        table = app.main_screen.table
        await pilot.press("end")
        assert table.scroll_y == table.max_scroll_y > 0
        assert table.show_vertical_scrollbar

        async def show(text: str) -> None:
            app.main_screen.view.set_filter(text)
            table.view_changed()
            await pilot.pause()

        await show("kind:operator")  # the cursor stays on screen, the end moves up
        assert len(app.main_screen.view.visible) == 299 and table.cursor == 298
        assert table.scroll_y == table.max_scroll_y
        await show("[3, 4]")  # 43 rows: still more than the table's height
        assert len(app.main_screen.view.visible) == 43
        assert table.virtual_size.height == 44
        assert table.vertical_scrollbar.window_virtual_size == 44
        assert table.scroll_y == table.max_scroll_y == 44 - table.scrollable_content_region.height
        assert table.render_line(1).text.split()[1].startswith("op")
        await show("op00")  # 10 rows: they fit, the scrollbar goes
        assert not table.show_vertical_scrollbar and table.scroll_y == 0
        assert [table.render_line(y).text.split()[1] for y in (1, 10)] == ["op000", "op009"]
        await show("")
        assert table.show_vertical_scrollbar
        assert table.vertical_scrollbar.window_virtual_size == 301


async def test_the_footer_offers_the_keys_that_apply_as_the_run_goes(wait, until):
    """Keys come and go in the footer (its recomposes coalesced: see KeyFooter)."""

    def footer_keys(app) -> set[str]:
        return {key.description for key in app.query("FooterKey")}

    hold = threading.Event()
    app = create_app(source=replay_source(hold=hold), show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await until(pilot, lambda: {"Cancel", "Export"} <= footer_keys(app))
        assert "Rerun" not in footer_keys(app)
        hold.set()
        await wait(pilot)
        await until(pilot, lambda: "Rerun" in footer_keys(app))
        assert "Cancel" not in footer_keys(app) and "Export" in footer_keys(app)


async def test_typing_a_filter_composes_the_footer_once_for_the_focus(wait, until, monkeypatch):
    """ "/" moves the focus, and the footer is composed for it (without "/ Filter").
    Textual refreshes the bindings twice for one change of focus, and the screen once
    more at the first character typed: each had composed the same keys again (~10 ms
    of the UI thread)."""
    composed: list[str] = []
    original = Footer.recompose

    async def counted_recompose(self):
        composed.append(self.screen.focused.id if self.screen.focused else "")
        await original(self)

    monkeypatch.setattr(Footer, "recompose", counted_recompose)
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait(pilot)
        await pilot.pause()
        composed.clear()

        def offered() -> set[str]:
            return {key.action for key in app.query("FooterKey")}

        await pilot.press("slash")
        await until(pilot, lambda: "focus_filter" not in offered())
        await pilot.press(*"add", "backspace")
        await pilot.pause()
        await pilot.pause()
        assert composed == ["filter-input"], composed
        await pilot.press("escape")  # back to the table: "/" is offered again
        await until(pilot, lambda: "focus_filter" in offered())
        assert composed == ["filter-input", "operator-table"], composed


async def test_keys_typed_in_one_burst_after_slash_are_the_filters_text(wait):
    """Issue 20, bug 4: '/gelu' sent at once (a paste, a macro, tmux send-keys) went to
    the app's keys (g sorted, e opened Export): the keys after '/' were queued to the
    table before the filter took focus. The events are posted at once, as a terminal's
    burst arrives, not pressed one by one."""
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        for key, character in [("slash", "/"), ("g", "g"), ("e", "e"), ("l", "l"), ("u", "u")]:
            app.post_message(events.Key(key, character))
        await pilot.pause()
        await pilot.pause()
        box = app.query_one("#filter-input", Input)
        assert box.value == "gelu"
        assert app.main_screen.view.sort.key == "rank" and app.screen is app.screen_stack[0]
        await pilot.press("slash")  # typed in the filter, "/" is a character
        assert box.value == "gelu/"
        for key, character in [("ctrl+u", None), ("r", "r"), ("e", "e"), ("l", "l")]:
            app.post_message(events.Key(key, character))
        await pilot.pause()
        await pilot.pause()
        assert box.value == "rel"  # cleared first, then the burst's text


def test_the_sort_arrow_is_never_cut_off():
    """Issue 20, bug 6: 'net bytes ↓' read 'net bytes…' at 140 columns (its column is 10
    wide), and 'device self ↓' read 'device sel…'."""
    from torchscan_tui.ui.widgets.table_columns import sorted_title

    assert sorted_title("net bytes", "↓", 10) == "bytes ↓"
    assert sorted_title("device self", "↑", 11) == "device ↑"
    assert sorted_title("CPU self", "↓", 11) == "CPU self ↓"
    assert sorted_title("calls", "↓", 7) == "calls ↓"
    assert sorted_title("operator and more", "↓", 6).endswith(" ↓")


async def test_the_sorted_bytes_column_shows_its_arrow_at_140_columns(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait(pilot)
        await pilot.press("m")
        header = app.export_screenshot().replace("&#160;", " ")
        assert "bytes ↓" in header and "net bytes…" not in header


async def test_the_header_shows_the_total_cpu_self_time(wait):
    """Issue 20, 10: the total in the header, not only in the b chart."""
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait(pilot)
        total = app.main_screen.state.context["cpu_self_seconds_sum"]
        from torchscan_tui.common.formatting import format_seconds

        assert f"Σ CPU self {format_seconds(total)}" in str(app.query_one("#run-header").render())


@pytest.mark.slow
async def test_selection_keys_a_and_shift_a_and_escape_twice(wait):
    app = create_app(source=replay_source(), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("a")
        assert app.main_screen.view.selected == set(app.main_screen.view.visible)
        await pilot.press("a")
        assert app.main_screen.view.selected == set()
        await pilot.press("space", "A")
        assert app.main_screen.view.selected == set()
        await pilot.press("space", "enter", "escape")  # the first escape closes the pane
        assert app.main_screen.view.selected
        await pilot.press("escape")
        assert app.main_screen.view.selected == set()
        await pilot.press("space")  # one row selected, then hidden by a filter
        await pilot.press("slash", *"nothing-like-it", "enter")
        await pilot.press("down")
        app.main_screen.view.set_filter("relu")
        await pilot.pause()
        await pilot.press("e")
        notes = " ".join(str(note.render()) for note in app.screen.query(".export-note"))
        assert "hidden by the filter" in notes


@pytest.mark.slow
async def test_h_hides_the_noise_rows_and_says_so(wait):
    """Issue 20, 12: one key hides [memory] rows and views; the status line says so."""
    rows = [
        make_row("aten::mm", [[8, 8]], 1, 0.002),
        make_row("[memory]", [], 3, 0.0, kind="memory"),
        make_row("aten::view", [[8, 8]], 5, 0.001),
    ]
    app = create_app(source=ReplaySource(recorded_events(rows)), show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        await pilot.press("h")
        assert visible_names(app) == ["aten::mm"]
        assert "noise hidden (h)" in status_text(app)
        await pilot.press("slash", "h")  # h is a character in the filter box
        assert app.query_one("#filter-input", Input).value == "h"
        await pilot.press("ctrl+u", "escape", "h")
        assert len(visible_names(app)) == 3 and "noise hidden" not in status_text(app)


@pytest.mark.slow
async def test_r_keeps_the_last_result_dimmed_and_x_returns_to_it(wait, until):
    """Issue 20, 17: r kept nothing on screen until the new rows came, and x then left
    "no rows". Now the last result stays, dimmed, and a cancel goes back to it."""
    source = replay_source()
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait(pilot)
        screen = app.main_screen
        first_rows = list(screen.view.rows)
        assert style_of(screen.table.render_line(2)).dim is not True
        full_events = source.events
        source.events = [e for e in full_events if not isinstance(e, RowsReceived)]
        source.hold = threading.Event()
        await pilot.press("r")
        await until(pilot, lambda: source.holding.is_set() and screen.state.phase == "receiving")
        assert screen.view.rows == first_rows and screen.table.stale
        assert style_of(screen.table.render_line(2)).dim  # the rows shown are the last run's
        assert "the last result, dimmed" in status_text(app)
        await pilot.press("x")
        await wait(pilot, runs=2)
        assert screen.state.phase == "cancelled"
        assert screen.view.rows == first_rows and not screen.table.stale
        assert "8 of 8 grouped operators" in status_text(app)
        assert "the last result: this run was cancelled" in status_text(app)
        new_rows = RowsReceived([make_row("aten::new_op", [[1]], 1, 0.001)])
        source.events = [e for e in full_events[:-1] if not isinstance(e, RowsReceived)]
        source.events += [new_rows, full_events[-1]]
        source.hold = None
        await pilot.press("r")
        await wait(pilot, runs=3)
        assert visible_names(app) == ["aten::new_op"] and not screen.table.stale


async def test_report_notes_show_once_in_a_warning_line(wait):
    """Issue 20, 18: the report's notes were only inside each row's detail pane."""
    notes = [
        {"code": "cuda_activity_unsupported", "message": "CUDA time is unavailable: [b]no[/b]"},
        {"code": "processes_not_profiled", "message": "2 DataLoader workers ran unprofiled"},
    ]
    app = create_app(source=replay_source(diagnostics=notes), show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait(pilot)
        line = app.main_screen.query_one("#notes-line")
        assert line.display
        text = str(line.render())
        assert "cuda_activity_unsupported: CUDA time is unavailable: [b]no[/b]" in text
        assert "+1 more note" in text
    plain = create_app(source=replay_source(), show_clock=False)
    async with plain.run_test(size=(160, 30)) as pilot:
        await wait(pilot)
        assert not plain.main_screen.query_one("#notes-line").display


async def test_while_the_workload_runs_its_live_rss_and_run_two_of_two_show(until):
    """Issue 20, 11: the sampled RSS beside its sparkline (labelled, with its axis) and
    which of the two runs is going, before the kernel's figure exists."""
    mib = 2**20
    events = [PhaseChanged("measuring")]
    events += [RssSampled(0.5 * i, (100 + 20 * i) * mib) for i in range(1, 5)]
    events += [RssSampled(2.5, 150 * mib), RunFinished("cancelled", "cancelled", {}, False)]
    source = ReplaySource(events, hold=threading.Event())
    app = create_app(source=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.main_screen
        await until(pilot, lambda: source.holding.is_set() and not screen.pump)
        await pilot.pause()
        figures = str(screen.query_one("#rss-figures").render())
        assert "now 150.0 MiB, highest so far 180.0 MiB (sampled from /proc" in figures
        assert str(screen.query_one("#rss-range").render()).strip() == "120.0 MiB–180.0 MiB"
        assert str(screen.query_one("#rss-span").render()).strip() == "0–2.5 s  now 150.0 MiB"
        header = str(screen.query_one("#run-header").render())
        assert "run 2 of 2, the whole script for peak RSS" in header
        await pilot.press("x")


@pytest.mark.slow  # a real profile
async def test_inclusive_time_and_flops_sort_and_show_on_a_wide_terminal(wait):
    """Issue 28, point 10: rows from a real profile carry inclusive time and FLOPs
    (torch's with_flops); i sorts by CPU total, f by FLOPs, and a wide terminal shows
    both beside self time."""
    import torch

    from torchscan_tui.worker.profiling import profile_workload

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    report = profile_workload(lambda: model(torch.ones(32, 64)).sum().backward(), with_flops=True)
    rows = report["operators"]
    app = create_app(source=replay_source(rows=rows), show_clock=False)
    async with app.run_test(size=(220, 30)) as pilot:
        await wait(pilot)
        shown = [column.key for column, _ in app.main_screen.table.column_layout()]
        assert {"cpu_total", "flops", "flop_rate"} <= set(shown)
        await pilot.press("i")
        view = app.main_screen.view
        totals = [view.rows[i]["cpu_total_seconds"] for i in view.visible]
        assert totals == sorted(totals, reverse=True) and "sort CPU total ↓" in status_text(app)
        await pilot.press("f")
        flops = [view.rows[i]["flops"] for i in view.visible]
        counted = [value for value in flops if value is not None]
        assert counted == sorted(counted, reverse=True) and flops[: len(counted)] == counted
        top = view.rows[view.visible[0]]
        assert top["operator"] in ("aten::addmm", "aten::mm") and top["flops_per_second"] > 0
        assert "FLOP" in app.export_screenshot()
