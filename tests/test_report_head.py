"""A big saved report opened from its ends: the first page at once, the rest read from
the file held open later, and only while it is the file that was opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchscan_tui.formats import report_head
from torchscan_tui.formats.jsonio import MAX_OBJECTS_VARIABLE
from torchscan_tui.formats.opening import open_profile_paged
from torchscan_tui.formats.report import ReportError, load_report, new_report, save_report
from torchscan_tui.formats.report_head import RowsUnreadable
from torchscan_tui.run.events import RunFinished
from torchscan_tui.run.sources import ReportSource

PAD = "x" * 700  # a row of ~900 bytes, near a real row's size with its call sites


def rows_of(count: int, tag: str = "") -> list[dict]:
    return [
        {
            "operator": f"op{i:05}{tag}",
            "input_shapes": [[i, 2]],
            "kind": "operator",
            "calls": 1 + i % 7,
            "cpu_self_seconds": 0.5 / (i + 1),
            "device_self_seconds": None,
            "cpu_net_bytes": 0,
            "callers": {PAD: 1},
            "diagnostics": [],
        }
        for i in range(count)
    ]


def saved(path: Path, rows: list[dict], **extra) -> Path:
    context = {"device": "cpu", "total_grouped_operators": len(rows)}
    save_report({**new_report(operators=rows, context=context), **extra}, path, overwrite=True)
    return path


def rest_of(pending) -> list[dict]:
    return [row for part in pending.split() for row in part.decode()]


def file_backed(pending) -> bool:
    """Whether the rows after the page wait in the file (not read yet)."""
    return isinstance(pending._later, report_head.RowsInFile)


@pytest.fixture
def big(tmp_path) -> tuple[Path, list[dict]]:
    """A report over :data:`report_head.SMALLEST` as the app saves it (~9.5 MiB)."""
    rows = rows_of(11_000)
    path = saved(tmp_path / "big.json", rows)
    assert path.stat().st_size > report_head.SMALLEST
    return path, rows


def test_a_big_report_opens_from_its_ends_to_the_rows_read_whole(big):
    path, rows = big
    opened = open_profile_paged(path, first_page=200)
    assert file_backed(opened.pending)
    assert opened.report["operators"] == rows[:200]
    assert rest_of(opened.pending) == rows[200:]
    whole = load_report(path)
    assert {**opened.report, "operators": rows} == whole  # every key around the rows


@pytest.mark.parametrize("head", [1500, 2048, 3001, 4096, 9999])
def test_a_head_cut_inside_a_row_pages_only_the_whole_rows_before_it(tmp_path, monkeypatch, head):
    """Small ends, so the head ends inside a row wherever it falls: the page is the
    rows that lie whole in it, and the rest starts with the row it cut."""
    monkeypatch.setattr(report_head, "HEAD_BYTES", head)
    monkeypatch.setattr(report_head, "TAIL_BYTES", 4096)
    monkeypatch.setattr(report_head, "SMALLEST", 50_000)
    rows = rows_of(100)
    path = saved(tmp_path / "r.json", rows)
    opened = open_profile_paged(path, first_page=200)
    assert file_backed(opened.pending)
    page = opened.report["operators"]
    assert 0 < len(page) < head // 800 + 1 and page == rows[: len(page)]
    assert rest_of(opened.pending) == rows[len(page) :]


def test_keys_after_the_rows_past_the_tail_read_the_file_whole(tmp_path, monkeypatch):
    """The context is bigger than the tail read: not opened from its ends, the same
    report all the same."""
    monkeypatch.setattr(report_head, "SMALLEST", 50_000)
    monkeypatch.setattr(report_head, "TAIL_BYTES", 4096)
    rows = rows_of(100)
    path = saved(tmp_path / "r.json", rows, added_by_hand=["s" * 100] * 100)
    opened = open_profile_paged(path, first_page=10)
    assert not file_backed(opened.pending)
    assert opened.report["operators"] + rest_of(opened.pending) == rows
    assert opened.report["added_by_hand"] == ["s" * 100] * 100


def test_a_report_written_over_in_place_is_refused_past_its_first_page(big):
    """Rows from another file must not follow this one's first page: the source ends
    with the page shown, marked incomplete, naming the file and the fix."""
    path, _ = big
    opened, shown = (open_profile_paged(path, first_page=200) for _ in range(2))
    with open(path, "r+b") as file:  # in place: same inode, new size and time
        file.seek(0, os.SEEK_END)
        file.write(b" \n")
    with pytest.raises(RowsUnreadable, match="changed on disk"):
        len(opened.pending)
    source = ReportSource(shown.report, shown.source, shown.pending)
    events: list = []
    source.run(events.append)
    (finished,) = events
    assert isinstance(finished, RunFinished) and not finished.complete
    assert str(path) in finished.message and "first 200 rows" in finished.message


def test_a_report_saved_over_by_rename_still_gives_its_own_rows(big):
    """An atomic save over the path (a new inode): the file held open is the one opened."""
    path, rows = big
    opened = open_profile_paged(path, first_page=200)
    saved(path, rows_of(11_000, tag="-new"))
    assert rest_of(opened.pending) == rows[200:]


def test_the_object_limit_still_guards_the_rest(big, monkeypatch):
    """The head and tail are under the limit, the rows are not: refused before decoding,
    saying how to raise it."""
    path, _ = big
    monkeypatch.setenv(MAX_OBJECTS_VARIABLE, "5000")
    opened = open_profile_paged(path, first_page=200)
    with pytest.raises(RowsUnreadable, match=MAX_OBJECTS_VARIABLE):
        len(opened.pending)


def descriptors_on(path: Path) -> list[str]:
    fds = Path("/proc/self/fd")
    return [fd.name for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve())]


def test_leaving_before_the_rest_is_read_closes_the_file(big):
    path, _ = big
    opened = open_profile_paged(path, first_page=200)
    source = ReportSource(opened.report, opened.source, opened.pending)
    assert len(descriptors_on(path)) == 1
    source.cleanup()
    assert descriptors_on(path) == []
    source.cleanup()  # twice is harmless


def test_reading_the_rest_closes_the_file(big):
    path, rows = big
    opened = open_profile_paged(path, first_page=200)
    assert len(opened.pending) == len(rows) - 200
    assert descriptors_on(path) == []


def test_a_first_row_longer_than_the_head_reads_the_file_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(report_head, "HEAD_BYTES", 600)  # a row is ~900 bytes
    monkeypatch.setattr(report_head, "SMALLEST", 50_000)
    rows = rows_of(100)
    path = saved(tmp_path / "r.json", rows)
    opened = open_profile_paged(path, first_page=10)
    assert not file_backed(opened.pending)
    assert opened.report["operators"] + rest_of(opened.pending) == rows


def test_a_big_report_cut_short_is_refused_before_anything_shows(big):
    """Its tail no longer closes the rows: read whole, and refused in one line as any
    report cut short."""
    path, _ = big
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 5000])
    with pytest.raises(ReportError, match="not valid JSON"):
        open_profile_paged(path, first_page=200)


def test_rows_damaged_past_the_first_page_of_a_big_report_keep_the_rows_before(big):
    """The rows are read a piece at a time: the parts of the pieces before the damage are
    sent, then the source ends marked incomplete, naming the file and counting the rows
    before it; none after it comes."""
    path, rows = big
    path.write_bytes(path.read_bytes().replace(b'"op05000"', b'"op05000', 1))
    opened = open_profile_paged(path, first_page=200)
    assert file_backed(opened.pending) and len(opened.report["operators"]) == 200
    events: list = []
    ReportSource(opened.report, opened.source, opened.pending).run(events.append)
    *parts, finished = events
    sent = [row for part in parts for row in part.texts.decode()]
    assert 0 < len(sent) < 5000 - 200 and sent == rows[200 : 200 + len(sent)]
    assert not finished.complete
    assert f"damaged after its first {200 + len(sent)} rows" in finished.message


@pytest.mark.parametrize("piece", [700, 4096, 50_000, 1 << 20])
def test_rows_read_a_piece_at_a_time_are_the_rows_read_whole(big, monkeypatch, piece):
    """Pieces that end inside a row, hold less than a row, or many: the same rows, in
    order, in parts of at most a thousand."""
    path, rows = big
    monkeypatch.setattr(report_head, "PIECE_BYTES", piece)
    opened = open_profile_paged(path, first_page=200)
    parts = list(opened.pending.split())
    assert all(0 < len(part) <= 1000 for part in parts)
    assert [row for part in parts for row in part.decode()] == rows[200:]
    assert descriptors_on(path) == []


def test_rows_not_a_line_each_past_the_first_page_are_read_whole_from_there(tmp_path):
    """A hand-edited report whose later rows span lines: the piece that does not split
    has the rest read whole and split, and every row still comes."""
    rows = rows_of(11_000)
    path = saved(tmp_path / "r.json", rows)
    text = path.read_bytes()
    at = text.index(b'{"operator": "op09000"')
    path.write_bytes(text[:at] + text[at:].replace(b', "input_shapes"', b',\n "input_shapes"'))
    opened = open_profile_paged(path, first_page=200)
    assert file_backed(opened.pending)
    assert [row for part in opened.pending.split() for row in part.decode()] == rows[200:]


def test_a_big_reports_rows_are_never_held_whole(big, monkeypatch):
    """Each read of the span is at most a piece (the whole span was one read before)."""
    path, _ = big
    reads: list[int] = []
    original = report_head.read_span

    def counted(descriptor: int, start: int, end: int) -> bytes:
        reads.append(end - start)
        return original(descriptor, start, end)

    monkeypatch.setattr(report_head, "read_span", counted)
    opened = open_profile_paged(path, first_page=200)
    assert sum(len(part) for part in opened.pending.split()) == 11_000 - 200
    assert len(reads) > 2 and max(reads) <= report_head.PIECE_BYTES
