"""Row and trace exports: safe cells, atomic writes, clear errors naming the user's path."""

from __future__ import annotations

import csv
import json
import math
import os

import pytest
from replay import make_row, sample_rows

from torchscan_tui.analysis.fields import EXPORT_COLUMNS
from torchscan_tui.formats import atomic
from torchscan_tui.formats.atomic import DestinationExists, ExportError
from torchscan_tui.formats.export import export_rows, rows_to_csv, rows_to_markdown
from torchscan_tui.formats.kept_trace import KeptTrace


def test_csv_neutralises_formula_cells(tmp_path):
    rows = [
        make_row('=HYPERLINK("x")', [], 1, 0.1),
        make_row("@sum", [], 1, 0.1),
        make_row("+cmd", [], 1, 0.1),
        make_row("-2+3", [], 1, 0.1, net=-5),
    ]
    parsed = list(csv.DictReader(rows_to_csv(rows).splitlines()))
    assert [row["operator"] for row in parsed] == ['\'=HYPERLINK("x")', "'@sum", "'+cmd", "'-2+3"]
    assert parsed[3]["cpu_net_bytes"] == "-5"  # numbers stay numbers


def test_markdown_escapes_pipes_and_newlines():
    text = rows_to_markdown([make_row("a|b\nc", [[1, 2]], 1, 0.5)])
    line = text.splitlines()[2]
    assert "a\\|b c" in line and line.count(" | ") == len(EXPORT_COLUMNS) - 1


def test_json_has_no_nan_and_keeps_none(tmp_path):
    path = tmp_path / "rows.json"
    export_rows([make_row("x", [], 1, math.nan, device=None)], path)
    data = json.loads(path.read_text())
    assert data[0]["cpu_self_seconds"] is None and data[0]["device_self_seconds"] is None
    assert "NaN" not in path.read_text()


def test_device_none_is_an_empty_csv_cell_not_zero(tmp_path):
    parsed = list(csv.DictReader(rows_to_csv(sample_rows()).splitlines()))
    assert all(row["device_self_seconds"] == "" for row in parsed)


def test_no_clobber_and_errors_name_the_users_path(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("old")
    with pytest.raises(DestinationExists):
        export_rows(sample_rows(), path)
    assert path.read_text() == "old"
    with pytest.raises(ExportError, match=str(tmp_path / "nope")):
        export_rows(sample_rows(), tmp_path / "nope" / "rows.csv")
    with pytest.raises(ExportError, match="unknown format"):
        export_rows(sample_rows(), tmp_path / "rows.txt")
    with pytest.raises(ExportError, match="too long"):
        export_rows(sample_rows(), tmp_path / ("x" * 300 + ".csv"))


def test_full_disk_leaves_no_partial_file_fake_writer(tmp_path, monkeypatch):
    """ENOSPC simulated by a failing fsync (no tiny tmpfs can be mounted here)."""

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", no_space)
    with pytest.raises(ExportError, match=r"rows\.csv: no space left"):
        export_rows(sample_rows(), tmp_path / "rows.csv")
    assert list(tmp_path.iterdir()) == []


def test_symlink_destination_is_replaced_not_followed(tmp_path):
    target = tmp_path / "target.csv"
    target.write_text("untouched")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with pytest.raises(DestinationExists):
        export_rows(sample_rows(), link)
    export_rows(sample_rows(), link, overwrite=True)
    assert not link.is_symlink() and target.read_text() == "untouched"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere; untestable as root")
def test_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ExportError, match="permission denied"):
        export_rows(sample_rows(), locked / "rows.csv")


def test_trace_copy_is_private_and_atomic(tmp_path):
    source = tmp_path / "src.json"
    source.write_text('{"traceEvents": []}')
    trace = KeptTrace.keep(source)
    out = trace.copy_to(tmp_path / "out.json")
    assert out.stat().st_mode & 0o777 == 0o600
    assert json.loads(out.read_text()) == {"traceEvents": []}
    trace.close()
    with pytest.raises(ExportError, match="gone"):
        trace.copy_to(tmp_path / "other.json")
    with pytest.raises(ExportError, match="cannot be opened"):
        KeptTrace.keep(tmp_path / "missing.json")


def test_exports_never_replace_a_device_fifo_or_socket(tmp_path):
    """Issue 16, point 5: ``--force`` onto a device node or a FIFO made it a regular file."""
    import socket
    import stat

    from torchscan_tui.formats.atomic import ExportError, write_text_atomically

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "null.json"
    link.symlink_to("/dev/null")
    sock_path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for target, kind in ((fifo, "a FIFO"), (link, "a character device"),
                             (sock_path, "a socket")):  # fmt: skip
            with pytest.raises(ExportError, match=f"is {kind}, not a regular file"):
                write_text_atomically(target, "{}", overwrite=True)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    finally:
        server.close()


def test_exports_honour_the_umask_and_never_loosen_a_mode(tmp_path):
    """Issue 16, point 6: ``umask 077`` gave 0644, ``--force`` over a 0600 file 0644."""
    from torchscan_tui.formats.atomic import write_text_atomically

    old = os.umask(0o077)
    try:
        made = write_text_atomically(tmp_path / "new.json", "{}")
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o600
    private = tmp_path / "private.json"
    private.write_text("old")
    private.chmod(0o600)
    write_text_atomically(private, "{}", overwrite=True)
    assert private.stat().st_mode & 0o777 == 0o600
    trace = write_text_atomically(tmp_path / "t.json", "{}", mode=0o600)
    assert trace.stat().st_mode & 0o777 == 0o600


def test_markdown_reads_in_the_screens_units_and_csv_keeps_raw_numbers():
    """Issue 20, 14: exports people paste. Markdown in ms and MiB as on screen; CSV raw
    SI numbers (pandas-ready); JSON a row per line, as compact as a saved report."""
    rows = [make_row("aten::mm", [[8, 8]], 3, 0.0125, device=None, net=3 * 2**20)]
    line = rows_to_markdown(rows).splitlines()[2]
    assert "12.500 ms" in line and "3.0 MiB" in line and "| — |" in line
    parsed = next(csv.DictReader(rows_to_csv(rows).splitlines()))
    assert parsed["cpu_self_seconds"] == "0.0125" and parsed["cpu_net_bytes"] == str(3 * 2**20)
    from torchscan_tui.formats.export import rows_to_json

    text = rows_to_json(rows * 3)
    assert len(text.splitlines()) == 5 and json.loads(text) == rows * 3
