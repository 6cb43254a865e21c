"""Snapshots of the main screen, the detail pane and the export dialog (recorded runs).

Deterministic: a recorded event stream, fixed sizes, and no clock on screen.
"""

from __future__ import annotations

from replay import replay_source, sample_rows

from torchscan_tui.analysis.diagnostics import worker_processes_not_profiled
from torchscan_tui.ui.app import create_app

from .conftest import wait_for_run

NOTE = {"code": "cuda_activity_unsupported", "message": "CUDA time is unavailable: no CUPTI."}
# A note a device run can have: made by the real diagnostics module, not written here.
WORKERS_NOTE = worker_processes_not_profiled()


def _app(**kwargs):
    return create_app(source=replay_source(**kwargs), show_clock=False)


async def _finished(pilot) -> None:
    await wait_for_run(pilot)
    pilot.app.main_screen.table.cursor = 0


def test_main_screen(snap_compare):
    assert snap_compare(_app(), terminal_size=(120, 30), run_before=_finished)


def test_main_screen_narrow(snap_compare):
    """80x24, a CPU run: no device column, the names get its width, whole footer keys."""
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=_finished)


def test_main_screen_narrow_device_run_sorted_by_bytes(snap_compare):
    """80x24, a device run with a report note: the warning line, the sorted column kept."""

    async def sort_by_bytes(pilot):
        await _finished(pilot)
        await pilot.press("m")

    app = _app(rows=sample_rows(with_device=True), device="cuda", diagnostics=[WORKERS_NOTE])
    assert snap_compare(app, terminal_size=(80, 24), run_before=sort_by_bytes)


def test_main_screen_wide(snap_compare):
    """200x60, a device run: every column, share and time per call, the whole footer."""
    app = _app(rows=sample_rows(with_device=True), device="cuda", diagnostics=[WORKERS_NOTE])
    assert snap_compare(app, terminal_size=(200, 60), run_before=_finished)


def test_detail_pane(snap_compare):
    async def open_detail(pilot):
        await _finished(pilot)
        await pilot.press("down", "enter")

    assert snap_compare(_app(diagnostics=[NOTE]), terminal_size=(120, 36), run_before=open_detail)


def test_export_dialog(snap_compare):
    async def open_dialog(pilot):
        await _finished(pilot)
        await pilot.press("space", "down", "space", "e")

    assert snap_compare(_app(), terminal_size=(120, 30), run_before=open_dialog)


def test_chart_screen(snap_compare):
    async def open_chart(pilot):
        await _finished(pilot)
        await pilot.press("b")

    assert snap_compare(_app(), terminal_size=(120, 30), run_before=open_chart)


def test_compare_screen(snap_compare):
    from replay import make_row

    from torchscan_tui.analysis.compare import compare_reports

    before = {"operators": [make_row("aten::mm", [[8, 8]], 4, 0.004),
                            make_row("aten::relu", [[8]], 4, 0.001)]}  # fmt: skip
    after = {"operators": [make_row("aten::mm", [[8, 8]], 4, 0.002),
                           make_row("aten::gelu", [[8]], 4, 0.0015)]}  # fmt: skip
    app = create_app(diff=compare_reports(before, after, "before.json", "after.json"))
    assert snap_compare(app, terminal_size=(120, 24))
