"""Exporting a trace (issue 26, point 1): only a trace this process wrote or opened, from
the descriptor it kept, a regular file only, bounded and cancellable. A report's
``trace_path`` is a hint to show, never a source to copy."""

from __future__ import annotations

import json
import os

import pytest

from torchscan_tui.formats.atomic import ExportError
from torchscan_tui.formats.kept_trace import ExportCancelled, KeptTrace
from torchscan_tui.formats.opening import open_profile_paged
from torchscan_tui.formats.report import SCHEMA_NAME, SCHEMA_VERSION

TRACE = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                          "tid": 1, "pid": 1, "args": {}}]}  # fmt: skip


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_devices_and_fifos_are_never_kept(tmp_path, special):
    if special == "fifo":
        special = tmp_path / "trace.json"
        os.mkfifo(special)  # opening it blocking would hang until a writer came
    with pytest.raises(ExportError, match="only a regular file is exported"):
        KeptTrace.keep(special)


def test_a_link_in_a_folder_others_write_is_not_followed(tmp_path):
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "trace.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(ExportError, match="cannot be opened"):
        KeptTrace.keep(tmp_path / "trace.json", follow_links=False)
    assert KeptTrace.keep(tmp_path / "trace.json").size == 2  # the user's own link: followed


def test_the_copy_is_of_the_file_kept_not_whatever_the_name_names_later(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    trace = KeptTrace.keep(path, follow_links=False)
    path.unlink()
    (tmp_path / "secret").write_text("not yours")
    path.symlink_to(tmp_path / "secret")  # swapped after it was kept
    out = trace.copy_to(tmp_path / "out.json")
    assert json.loads(out.read_text()) == TRACE


def test_a_growing_file_is_copied_up_to_its_size_when_kept(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(b"x" * 1000)
    trace = KeptTrace.keep(path)
    with open(path, "ab") as more:
        more.write(b"y" * 10_000_000)
    assert trace.copy_to(tmp_path / "out.json").stat().st_size == 1000


def test_a_cancelled_copy_leaves_no_file(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(b"x" * (5 << 20))
    trace = KeptTrace.keep(path)
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 2  # after two chunks

    with pytest.raises(ExportCancelled):
        trace.copy_to(tmp_path / "out.json", cancelled=cancelled)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]


def _saved_report(tmp_path, trace_path: str):
    report = {"schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, "operators": [],
              "context": {}, "diagnostics": [], "totals": {}, "trace_path": trace_path}  # fmt: skip
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


@pytest.mark.parametrize("named", ["/etc/passwd", "/dev/zero"])
def test_a_reports_trace_path_is_never_a_source(tmp_path, named):
    opened = open_profile_paged(_saved_report(tmp_path, named), keep_trace=True)
    assert opened.trace is None and opened.report["trace_path"] == named  # shown, not kept


def test_an_opened_trace_is_kept_as_it_was_read(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    opened = open_profile_paged(path, keep_trace=True)
    assert opened.trace is not None and opened.trace.size == path.stat().st_size
    assert open_profile_paged(path).trace is None  # only when asked (the app asks)


async def test_t_in_the_app_never_copies_a_reports_trace_path(tmp_path):
    from torchscan_tui.ui.app import create_app
    from torchscan_tui.ui.screens.export_dialog import ExportDialog

    path = _saved_report(tmp_path, "/etc/passwd")
    opened = open_profile_paged(path, keep_trace=True)
    app = create_app(report=opened.report, report_path=str(path), show_clock=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        screen = app.main_screen
        while screen.state.phase != "done":
            await pilot.pause(0.01)
        assert screen.check_action("export_trace", ()) is False
        await pilot.press("t")
        assert not isinstance(app.screen, ExportDialog)
        said = " ".join(notice.message for notice in app._notifications)
        assert "names a trace at /etc/passwd" in said and "never copied" in said
    assert not (tmp_path / "torchscan-trace.json").exists()
