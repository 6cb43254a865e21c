"""Outside text is data: names, messages, paths and report fields are shown literally.

Issue 16, points 1 and 2. Each string below crashed the app with ``MarkupError``, lost its
brackets, or sent an escape sequence to the real terminal before outside text went through
one way of showing it (``ui/literal.py``).
"""

from __future__ import annotations

import pytest
from replay import ReplaySource, make_row, recorded_events
from textual.events import Paste
from textual.widgets import Input

from torchscan_tui.formats.report import SCHEMA_NAME, SCHEMA_VERSION
from torchscan_tui.run.events import RunFinished
from torchscan_tui.ui.app import create_app
from torchscan_tui.ui.widgets.filter_bar import FilterBar

OSC_TITLE = "\x1b]2;pwned\x1b\\"
HOSTILE = [
    "[/opt/data] not found",
    "bad shape [/]",
    "[rank0]: step 3",
    "Optional[Tensor]",
    "[bold red]loud[/]",
    f"title {OSC_TITLE}change",
    "csi \x1b[2J clear",
    "bidi \u202eabc",
    "nul \x00 byte",
]


def _screen_text(app) -> str:
    """What the screen shows, as text (the SVG export writes spaces as &#160;)."""
    return app.export_screenshot().replace("&#160;", " ")


def _assert_shown_literally(svg: str) -> None:
    assert "\x1b" not in svg and "\u202e" not in svg and "\x00" not in svg


async def _export_into_a_missing_folder(app, pilot, path) -> None:
    """``e``, a path whose folder (named with markup) does not exist, enter: the error
    notice names the path literally."""
    await pilot.press("e")
    await pilot.pause()
    app.screen.query_one("#export-path", Input).value = str(path)
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    _assert_shown_literally(_screen_text(app))


def _hostile_report() -> dict:
    rows = [make_row(text, [[1, 2]], 1, 0.001 * (i + 1)) for i, text in enumerate(HOSTILE)]
    rows[0]["kind"] = f"op{OSC_TITLE}"
    rows[0]["callers"] = {"[/caller]": 1, f"c{OSC_TITLE}": 2}
    notes = [{"code": "note", "message": text} for text in HOSTILE]
    rows[0]["diagnostics"] = notes[:2]
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": rows,
        "context": {"device": f"cuda{OSC_TITLE}[/x]", "total_grouped_operators": len(rows)},
        "diagnostics": notes,
        "totals": {},
        "kernels": [
            {
                "kernel": text,
                "operator": "[/op]",
                "activity": "kernel",
                "direction": None,
                "calls": 1,
                "total_seconds": 1e-3,
                "mean_seconds": 1e-3,
                "min_seconds": 1e-3,
                "max_seconds": 1e-3,
            }  # fmt: skip
            for text in HOSTILE
        ],
        "run": {"complete": False, "note": f"cut [/x] {OSC_TITLE}"},
    }


@pytest.mark.slow
async def test_hostile_report_fields_are_shown_literally_everywhere(until, tmp_path):
    app = create_app(report=_hostile_report(), report_path="a[/x].json", show_clock=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await until(pilot, lambda: len(app.main_screen.view.rows) == len(HOSTILE))
        await pilot.press("enter")  # the detail pane: kind, callers, diagnostics
        await pilot.pause()
        svg = _screen_text(app)
        _assert_shown_literally(svg)
        assert "[/opt/data] not found" in svg or "[/opt/data]" in svg
        assert "\\x1b]2;pwned" in svg
        # A filter holding markup is typed and shown, not parsed.
        await pilot.press("slash")
        app.query_one("#filter-input", Input).value = "a [/x]"
        bar = app.query_one(FilterBar)
        await until(pilot, lambda: bar.error)  # the error waits for a pause in the typing
        await pilot.press("escape")
        _assert_shown_literally(_screen_text(app))
        # The kernel view, its filter, and an export into a folder that does not exist.
        await pilot.press("k")
        await pilot.pause()
        _assert_shown_literally(_screen_text(app))
        await _export_into_a_missing_folder(app, pilot, tmp_path / "[/x]" / "k.csv")
        await pilot.press("escape", "escape", "question_mark")
        await pilot.pause()
        _assert_shown_literally(_screen_text(app))


@pytest.mark.slow
@pytest.mark.parametrize("message", HOSTILE)
async def test_a_failed_runs_message_is_a_literal_notice(wait, message):
    events = recorded_events(outcome="failed")
    finished = events[-1]
    events[-1] = RunFinished("failed", message, finished.report, False)
    app = create_app(source=ReplaySource(events, title=f"w{OSC_TITLE}.py"), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait(pilot)
        said = [notice.message for notice in app._notifications]
        assert said and all("\x1b" not in text for text in said)
        svg = _screen_text(app)
        _assert_shown_literally(svg)
        if "\x1b" not in message and "\u202e" not in message and "\x00" not in message:
            assert said[-1] == message
            assert message in svg  # the notice on screen, brackets and all


async def test_the_picker_names_files_literally(tmp_path):
    """A directory of traces named with markup and escapes opens the picker's labels."""
    from torchscan_tui.ui.app import create_app

    folder = tmp_path / "runs[b]"
    folder.mkdir()
    traces = [folder / "[red]x.json", folder / f"t{OSC_TITLE}.json"]
    for trace in traces:
        trace.write_text("{}")
    picker = create_app(traces=(folder, traces))
    async with picker.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        svg = _screen_text(picker)
        _assert_shown_literally(svg)
        assert "[red]x.json" in svg and "runs[b]" in svg


@pytest.mark.slow
async def test_the_compare_screen_shows_outside_text_literally(until, tmp_path):
    from torchscan_tui.analysis.compare import compare_reports
    from torchscan_tui.ui.app import create_app

    before = {"operators": [make_row(text, [[1]], 1, 0.002) for text in HOSTILE]}
    after = {"operators": [make_row(text, [[1]], 2, 0.003) for text in HOSTILE[::2]]}
    diff = compare_reports(before, after, f"a[/x]{OSC_TITLE}.json", "b[bold].json")
    app = create_app(diff=diff)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await pilot.pause()
        svg = _screen_text(app)
        _assert_shown_literally(svg)
        assert "b[bold].json" in svg and "[/opt/data] not found" in svg
        await pilot.press("slash")
        box = app.query_one("#filter-input", Input)
        box.post_message(Paste("[/x] \x1b[2J"))  # a paste holding an escape is refused
        await pilot.pause()
        assert box.value == ""
        box.post_message(Paste("[/x]"))
        bar = app.query_one(FilterBar)
        await until(pilot, lambda: box.value == "[/x]" and bar.error)
        await pilot.press("escape", "b")
        await pilot.pause()
        _assert_shown_literally(_screen_text(app))
        await pilot.press("escape")
        await _export_into_a_missing_folder(app, pilot, tmp_path / "[/x]" / "c.csv")
