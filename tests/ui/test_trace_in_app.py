"""A big trace read in the app (run/trace_source.py): the app is up while it is read, the
first part's rows show with their note, and the whole trace's rows replace them."""

from __future__ import annotations

import threading

from torchscan_tui.formats import early_rows
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.run import trace_source
from torchscan_tui.run.trace_source import TraceSource
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.run_header import RunHeader


class HeldAfterHandOver(early_rows.EarlyRows):
    """Hands the part over, then holds the reading until the test lets it go."""

    handed = threading.Event()
    go_on = threading.Event()

    def consume(self, reader):
        add = super().consume(reader)

        def held(batch):
            add(batch)
            if self.handed_over and not HeldAfterHandOver.handed.is_set():
                HeldAfterHandOver.handed.set()
                HeldAfterHandOver.go_on.wait(30)

        return held


async def test_the_parts_rows_show_then_the_whole_traces(until, wait, trace_in_pieces, monkeypatch):
    monkeypatch.setattr(trace_source, "EarlyRows", HeldAfterHandOver)
    HeldAfterHandOver.handed.clear()
    HeldAfterHandOver.go_on.clear()
    whole = open_profile(trace_in_pieces)[0]
    app = create_app(source=TraceSource(str(trace_in_pieces), early_after_s=0.0))
    try:
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            screen = app.main_screen
            await until(pilot, HeldAfterHandOver.handed.is_set)
            await until(pilot, lambda: bool(screen.view.rows) and not screen.pump)
            header = screen.query_one(RunHeader).heading
            assert header.running and header.phase == "reading", header
            assert "reading the trace" in header.phase_label
            # Its figures are the part's, and say so; it holds no device work yet (the
            # operators come first in the file): the device is not known before the whole.
            assert header.device == "?" and header.totals.startswith("first part: Σ CPU")
            notes = [note["code"] for note in screen.state.diagnostics]
            assert notes[0] == "early_rows"
            assert (
                0
                < sum(r["calls"] for r in screen.view.rows)
                < sum(r["calls"] for r in whole["operators"])
            )
            await pilot.press("e")  # the part's rows are not exported as if they were all
            assert app.screen is screen, "no export dialog"
            assert any("still being read" in n.message for n in app._notifications)
            HeldAfterHandOver.go_on.set()
            await wait(pilot)
            assert screen.view.rows == whole["operators"], "the whole trace's rows, alone"
            assert "early_rows" not in {note["code"] for note in screen.state.diagnostics}
            assert screen.state.outcome == "done" and screen.state.complete
            assert screen.state.trace is not None, "t exports the trace read"
    finally:
        HeldAfterHandOver.go_on.set()
