"""k: the kernel view of a real GPU trace (alexnet, from HTA's test data), in the real app."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable, Input

from torchscan_tui.analysis.filtering import FilterError
from torchscan_tui.analysis.kernel_view import filter_kernels, sort_kernels
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.screens.kernel_screen import KernelScreen

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
