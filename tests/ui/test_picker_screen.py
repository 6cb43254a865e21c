"""Picking one trace from a trace-handler directory with several."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchscan_tui.formats.opening import traces_in
from torchscan_tui.ui.app import create_app

DATA = Path(__file__).parent.parent / "data"


def folder_with_traces(tmp_path: Path) -> Path:
    for index, name in enumerate(["host_1.pt.trace.json", "host_2.pt.trace.json"]):
        shutil.copy(DATA / "cpu_trace.json", tmp_path / name)
        os.utime(tmp_path / name, (1_000_000 + index, 1_000_000 + index))
    (tmp_path / "notes.txt").write_text("not a trace")
    return tmp_path


async def test_newest_first_and_enter_picks(tmp_path):
    folder = folder_with_traces(tmp_path)
    traces = traces_in(folder)
    assert [p.name for p in traces] == ["host_2.pt.trace.json", "host_1.pt.trace.json"]
    app = create_app(traces=(folder, traces))
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("down", "enter")
    assert app.return_value == folder / "host_1.pt.trace.json"


async def test_escape_picks_nothing(tmp_path):
    folder = folder_with_traces(tmp_path)
    app = create_app(traces=(folder, traces_in(folder)))
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("escape")
    assert app.return_value is None
