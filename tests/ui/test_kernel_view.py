"""k: the kernel view of a real GPU trace (alexnet, from HTA's test data), in the real app."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App
from textual.widgets import DataTable, Input

from torchscan_tui.analysis.filtering import FilterError
from torchscan_tui.analysis.kernel_view import filter_kernels, sort_kernels
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.kernel_screen import COLUMNS as KERNEL_COLUMNS
from torchscan_tui.ui.screens.kernel_screen import KernelScreen
from torchscan_tui.ui.widgets.fitted_data_table import FittedDataTable

DATA = Path(__file__).parent.parent / "data"


def _cells(table: DataTable, column: int) -> list[str]:
    return [
        cell.plain if isinstance(cell, Text) else str(cell)
        for cell in (table.get_row_at(i)[column] for i in range(table.row_count))
    ]


def test_filter_and_sort_are_plain_functions():
    report, _ = open_profile(DATA / "alexnet_cuda.json.gz")
    kernels = report["kernels"]
    copies = filter_kernels(kernels, "HTOD copy_")
    assert [k["kernel"] for k in copies] == ["Memcpy HtoD (Pageable -> Device)"]
    # The rows' filter language: -word, a|b, *glob* (over a field: a name, an operator).
    assert filter_kernels(kernels, "-memcpy -memset") == [
        k for k in kernels if "mem" not in k["kernel"].lower()
    ]
    either = filter_kernels(kernels, "memset|htod")
    assert {k["direction"] or k["activity"] for k in either} == {"HtoD", "memset"}
    assert filter_kernels(kernels, "*convolution") == [
        k for k in kernels if k["operator"].endswith("convolution")
    ]
    with pytest.raises(FilterError, match="no input shapes"):
        filter_kernels(kernels, "[8, 64]")
    by_calls = sort_kernels(kernels, "calls")
    assert [k["calls"] for k in by_calls] == sorted((k["calls"] for k in kernels), reverse=True)
    assert sort_kernels(kernels, "calls", descending=False) == sorted(
        kernels, key=lambda k: k["calls"]
    )


@pytest.mark.slow
async def test_kernel_view_filters_sorts_and_exports(until, tmp_path):
    report, source = open_profile(DATA / "alexnet_cuda.json.gz")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await until(pilot, lambda: bool(app.main_screen.state.kernels))
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KernelScreen))
        table = app.screen.query_one(DataTable)
        assert table.row_count == 19
        assert _cells(table, 1)[0] == "aten::copy_"
        assert _cells(table, 2)[0] == "memcpy HtoD"
        # The operator table's keys do not reach through: c would sort it, and l (no log
        # in a reopened file) says nothing here.
        await pilot.press("c", "l")
        assert app.main_screen.view.sort.key == "rank"
        assert not any(notice.title == "l" for notice in app._notifications)
        await pilot.press("n")
        calls = [int(value.replace(",", "")) for value in _cells(table, 3)]
        assert calls == sorted(calls, reverse=True)
        await pilot.press("slash")
        await pilot.press(*"convolution")
        await until(pilot, lambda: table.row_count == 9)
        assert set(_cells(table, 1)) == {"aten::cudnn_convolution"}
        await pilot.press("enter", "e")
        app.screen.query_one("#export-path", Input).value = str(tmp_path / "k.csv")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        with open(tmp_path / "k.csv", newline="") as handle:
            exported = list(csv.DictReader(handle))
        assert len(exported) == 9
        assert {row["operator"] for row in exported} == {"aten::cudnn_convolution"}
        assert list(exported[0])[:2] == ["kernel", "operator"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, KernelScreen))


async def test_a_cpu_profile_offers_no_kernel_view(until):
    report, source = open_profile(DATA / "cpu_trace.json")
    app = create_app(report=report, report_path=source, show_clock=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.main_screen.view.rows != [])
        assert app.main_screen.check_action("kernels", ()) is False
        await pilot.press("k")
        await pilot.pause()
        assert not isinstance(app.screen, KernelScreen)


def _kernel(name: str, total: float, calls: int) -> dict:
    return {"kernel": name, "operator": "aten::cudnn_convolution_backward_input",
            "activity": "kernel", "direction": None, "calls": calls, "total_seconds": total,
            "mean_seconds": total / calls, "min_seconds": total / calls / 2,
            "max_seconds": total / calls * 2}  # fmt: skip


def _kernel_host(kernels: list[dict]) -> App:
    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(KernelScreen(kernels, "cuda, 2 kernels", lambda rows: None))

    return Host()


async def test_the_kernel_columns_fit_a_narrow_terminal_and_refit_when_it_is_resized():
    """At 160 columns the kernel view's fixed widths filled the screen; narrower, the
    figures it is sorted by were off to the right, behind a horizontal scroll. Now the
    least needed figures go first (min, max, what, mean), never the sorted one, and the
    names share what the figures leave."""
    name = "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)"
    app = _kernel_host([_kernel(name, 0.080756, 162), _kernel("volta_sgemm_64x64_nt", 0.01, 9)])
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(FittedDataTable)
        assert table.shown_keys() == ["kernel", "operator", "calls", "total"]
        assert table.virtual_size.width <= table.size.width  # nothing behind a scroll
        assert _cells(table, 3)[0] == "80.756 ms"
        await pilot.press("x")  # sorted by the longest call: that column stays
        assert "max" in table.shown_keys()
        await pilot.press("down")
        await pilot.resize_terminal(200, 20)
        await pilot.pause()
        assert table.shown_keys() == [column.key for column in KERNEL_COLUMNS]
        assert table.cursor_row == 1  # the row the cursor was on
        assert name in _cells(table, 0)  # the whole name, with the room
