"""The compare screen, driven by keys: marks, sort by delta, filter, export."""

from __future__ import annotations

import csv

from replay import make_row
from textual.widgets import Input

from torchscan_tui.analysis.compare import compare_reports
from torchscan_tui.common.formatting import MISSING, format_ratio
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.compare_heading import side_names
from torchscan_tui.ui.widgets.compare_table import CompareTable


def diff():
    before = [
        make_row("aten::mm", [[8, 16]], 10, 0.010),
        make_row("aten::relu", [[8]], 5, 0.002),
        make_row("aten::gone", [[1]], 1, 0.004),
    ]
    after = [
        make_row("aten::mm", [[8, 16]], 10, 0.004),
        make_row("aten::relu", [[8]], 6, 0.003),
        make_row("aten::new", [[2]], 2, 0.001),
    ]
    return compare_reports({"operators": before}, {"operators": after}, "a.json", "b.json")


def names(app):
    return [app.main_screen.view.rows[i]["operator"] for i in app.main_screen.view.visible]


async def test_sorted_by_delta_with_marks_and_filter():
    app = create_app(diff=diff())
    async with app.run_test(size=(120, 24)) as pilot:
        assert names(app) == ["aten::relu", "aten::new", "aten::gone", "aten::mm"]
        line = str(app.main_screen.table.render_line(1).text)
        assert "aten::relu" in line and "+1.000 ms" in line and "1.50x" in line
        assert "new" in str(app.main_screen.table.render_line(2).text)
        await pilot.press("d")
        assert names(app)[0] == "aten::mm"  # flipped: the largest improvement first
        await pilot.press("n")
        assert names(app)[0] == "aten::new"
        await pilot.press("slash", *"relu", "enter")
        assert names(app) == ["aten::relu"]


async def test_a_click_on_a_column_title_sorts_the_compare_rows():
    app = create_app(diff=diff())
    async with app.run_test(size=(120, 24)) as pilot:
        ratio_x = str(app.main_screen.table.render_line(0).text).index("ratio") + 1
        await pilot.click(CompareTable, offset=(ratio_x, 0))
        assert app.main_screen.view.sort.key == "ratio"
        assert names(app)[:2] == ["aten::relu", "aten::mm"]  # 1.50x, 0.40x; no ratio last


async def test_export_compare_rows_to_csv(tmp_path):
    app = create_app(diff=diff())
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.press("a", "e")
        app.screen.query_one("#export-path", Input).value = str(tmp_path / "d.csv")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
    rows = list(csv.DictReader((tmp_path / "d.csv").open()))
    assert [row["operator"] for row in rows] == [
        "aten::relu",
        "aten::new",
        "aten::gone",
        "aten::mm",
    ]
    assert rows[0]["presence"] == "both" and rows[0]["cpu_ratio"] == "1.5"
    assert rows[1]["presence"] == "only_after" and rows[1]["cpu_ratio"] == ""


async def test_the_compare_header_shows_device_totals_when_a_side_has_them():
    """Issue 15: compare of GPU traces compares device time (its header said CPU only)."""
    from pathlib import Path

    from torchscan_tui.formats.opening import open_profile

    data = Path(__file__).parent.parent / "data"
    before, _ = open_profile(data / "alexnet_cuda.json.gz")
    app = create_app(diff=compare_reports(before, before, "a.json", "b.json"))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        header = str(app.query_one("#run-header").render())
        assert "device self 66.203 ms → 66.203 ms" in header


async def test_o_compares_by_operator_alone_and_back():
    """Issue 20, 15: o in the compare screen merges each side's shapes, and back."""
    before = [make_row("aten::mm", [[8, 16]], 1, 0.004), make_row("aten::mm", [[4, 16]], 1, 0.002)]
    after = [make_row("aten::mm", [[16, 16]], 2, 0.009)]
    pair = ({"operators": before}, {"operators": after}, "a.json", "b.json")

    def rediff(by):
        return compare_reports(*pair, by=by)

    app = create_app(diff=rediff("shape"), rediff=rediff)
    async with app.run_test(size=(160, 24)) as pilot:
        assert len(app.main_screen.view.rows) == 3
        await pilot.press("o")
        assert names(app) == ["aten::mm"]
        line = str(app.main_screen.table.render_line(1).text)
        assert "(shapes merged: 2 → 1)" in line and "+3.000 ms" in line
        assert "by operator" in str(app.main_screen.query_one("#run-header").render())
        await pilot.press("percent_sign")
        assert app.main_screen.view.sort.key == "ratio"
        await pilot.press("o")
        assert len(app.main_screen.view.rows) == 3
    plain = create_app(diff=rediff("shape"))  # no rediff: o is not offered
    async with plain.run_test(size=(120, 24)) as pilot:
        assert plain.main_screen.check_action("toggle_by_operator", ()) is False


async def test_j_and_k_move_the_cursor_as_the_compare_help_says():
    """Its help lists "↑ ↓ j k": k did nothing here (the profile's k opens the kernels,
    so its table binds only j; the compare table has no kernel view to open)."""
    app = create_app(diff=diff())
    async with app.run_test(size=(120, 24)) as pilot:
        table = app.main_screen.table
        await pilot.press("j", "j")
        assert table.cursor == 2
        await pilot.press("k")
        assert table.cursor == 1


def test_the_sides_are_named_without_the_folders_they_share():
    assert side_names("/runs/a/trace.json", "/runs/b/trace.json") == (
        "a/trace.json",
        "b/trace.json",
    )
    assert side_names("/t/before.json", "/t/after.json") == ("before.json", "after.json")
    assert side_names("a.json", "b.json") == ("a.json", "b.json")
    assert side_names("/runs", "/runs/b.json") == ("/runs", "/runs/b.json")  # one holds the other
    assert side_names("/x/same.json", "/x/same.json") == ("/x/same.json", "/x/same.json")


async def test_at_100_columns_the_heading_keeps_the_after_side_and_the_totals():
    """Two whole paths had filled the line: the after side and the CPU totals were cut.
    Now the folders both share are left out, and the totals take a second line where
    the names and they do not fit on one (the heading had wrapped as "CPU" / "self ...")."""
    before = "/work/shared/traces/trace_diff_control.json.gz"
    after = "/work/shared/traces/resnet50_2021_cuda.pt.trace.json.gz"
    rows = [make_row("aten::mm", [[8, 16]], 10, 0.010)]
    app = create_app(diff=compare_reports({"operators": rows}, {"operators": rows}, before, after))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        heading = app.main_screen.query_one("#run-header")
        lines = [heading.render_line(y).text.strip() for y in range(heading.size.height)]
        assert lines == [
            "compare  trace_diff_control.json.gz → resnet50_2021_cuda.pt.trace.json.gz",
            "CPU self 10.000 ms → 10.000 ms",
        ], lines  # broken between the names and the totals, not inside a figure
        await pilot.resize_terminal(160, 24)  # room for both: one line
        await pilot.pause()
        assert heading.size.height == 1
        assert (
            "resnet50_2021_cuda.pt.trace.json.gz  CPU self 10.000 ms" in heading.render_line(0).text
        )


def test_a_large_ratio_fits_the_ratio_column():
    assert [format_ratio(v) for v in (None, 1.5, 16.94, 99.99, 123.44, 1079.65, 99_999)] == [
        MISSING, "1.50x", "16.94x", "99.99x", "123.4x", "1,080x", "99,999x"
    ]  # fmt: skip
    assert max(len(format_ratio(v)) for v in (99.995, 999.95, 99_999.4)) <= 7
