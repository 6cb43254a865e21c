"""Every dialog is one :class:`Dialog`: its box centred on a wide terminal (the step
overview and the rank picker once sat at the left edge)."""

from __future__ import annotations

import pytest
from textual.app import App

from torchscan_tui.ui.screens.dialog import Dialog
from torchscan_tui.ui.screens.export_dialog import ExportDialog
from torchscan_tui.ui.screens.help_screen import HelpScreen
from torchscan_tui.ui.screens.overview_screen import OverviewScreen
from torchscan_tui.ui.screens.rank_screen import RankScreen

SUMMARY = {"rank": 0, "rows": 1, "host_cpu_self_seconds": 0.001, "host_collective_seconds": 0.0,
           "host_compute_seconds": 0.001, "operators": []}  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [
        lambda: OverviewScreen({"steps": [], "categories": []}, "Step overview"),
        lambda: RankScreen([SUMMARY, {**SUMMARY, "rank": 1}], ["no straggler"], None),
        lambda: HelpScreen([("q", "quit")]),
        lambda: ExportDialog("Export rows", "rows.csv", ["a note"]),
    ],
)
async def test_a_dialogs_box_is_centred_on_a_wide_terminal(make):
    app = App()
    async with app.run_test(size=(240, 50)) as pilot:
        screen = make()
        assert isinstance(screen, Dialog)
        await app.push_screen(screen)
        await pilot.pause()
        box = screen.query_one(".dialog-box").region
        left, right = box.x, 240 - box.right
        assert box.width < 240 and abs(left - right) <= 1, (left, right)
