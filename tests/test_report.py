"""Report save/load: atomic, no clobbering, clear one-line errors."""

from __future__ import annotations

import json
import math

import pytest
from conftest import assert_refused_in_one_line

from torchscan_tui.analysis.compare import compare_reports
from torchscan_tui.formats.atomic import DestinationExists, ExportError
from torchscan_tui.formats.opening import open_profile_paged
from torchscan_tui.formats.report import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    ReportError,
    decode_report,
    dumps_report,
    load_report,
    new_report,
    save_report,
)


def minimal(operators=None, context=None, **extra):
    """The smallest report :func:`new_report` makes, with ``extra`` keys over it."""
    return {**new_report(operators=operators, context=context), **extra}


def test_round_trip_and_no_nan(tmp_path):
    path = tmp_path / "r.json"
    save_report(minimal(context={"x": math.nan, "y": [math.inf, 1.5]}), path)
    loaded = load_report(path)
    assert loaded["context"] == {"x": None, "y": [None, 1.5]}
    assert "NaN" not in path.read_text()


def test_existing_file_is_not_clobbered(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("keep me")
    with pytest.raises(DestinationExists):
        save_report(minimal(), path)
    assert path.read_text() == "keep me"
    save_report(minimal(), path, overwrite=True)
    assert json.loads(path.read_text())["schema"] == SCHEMA_NAME
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_bad_destinations_name_the_users_path(tmp_path):
    with pytest.raises(ExportError, match="missing"):
        save_report(minimal(), tmp_path / "missing" / "r.json")
    with pytest.raises(ExportError, match="is a directory"):
        save_report(minimal(), tmp_path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json", "is not valid JSON"),
        ("", "is empty"),
        (" \n", "is empty"),
        ('{"a": 1}', "is not a torchscan-tui report"),
        (json.dumps(minimal(schema_version=SCHEMA_VERSION + 1)), "newer torchscan-tui"),
    ],
)
def test_load_errors_are_one_line(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert_refused_in_one_line(load_report, path, expected)


def test_missing_report(tmp_path):
    with pytest.raises(ReportError, match="does not exist"):
        load_report(tmp_path / "nope.json")


def _operators(rows: int) -> list[dict]:
    """Complete rows: a report's rows are checked for every field's type on reading."""
    return [
        {
            "operator": f"op{i}",
            "input_shapes": [[i, 2]],
            "calls": i,
            "cpu_self_seconds": 0.5,
            "device_self_seconds": None,
            "cpu_net_bytes": 0,
        }  # fmt: skip
        for i in range(rows)
    ]


def _indented(report: dict) -> bytes:
    """A report as an older torchscan-tui wrote it: every field indented."""
    return json.dumps(report, indent=1).encode()


def _ours(report: dict) -> bytes:
    return dumps_report(report).encode()


def test_a_saved_report_holds_a_row_per_line():
    report = minimal(operators=_operators(3), context={"note": "a\nb"})
    text = dumps_report(report)
    assert json.loads(text) == report
    lines = text.splitlines()
    rows = [json.loads(line.strip().rstrip(",")) for line in lines if line.startswith("  {")]
    assert rows == report["operators"]
    assert len(text) < len(_indented(report))
    assert json.loads(dumps_report(minimal())) == minimal()  # no rows: indented as before


def test_a_row_with_nan_or_infinity_is_saved_with_null():
    rows = [{"operator": "a", "cpu_self_seconds": math.nan, "shares": [math.inf, 1.5]}]
    saved = json.loads(dumps_report(minimal(operators=[*_operators(2), *rows])))
    assert saved["operators"][2] == {
        "operator": "a",
        "cpu_self_seconds": None,
        "shares": [None, 1.5],
    }


@pytest.mark.parametrize("write", [_ours, _indented])
@pytest.mark.parametrize("extra", [{}, {"added_by_hand": {"note": 1}}])
def test_a_first_page_then_the_rest_decode_to_the_full_report(extra, write):
    """Only the first rows decode at once; the rest, part by part, follow them (the
    first page is left as it is: no list is filled behind the caller's back). A file
    laid out a row per line (as we write it) and one indented throughout (as we used to)
    give the same; a key we do not write is kept."""
    data = write(minimal(operators=_operators(2500), trace_path=None, **extra))
    full, nothing_left = decode_report(data, "r.json")
    assert len(nothing_left) == 0
    report, pending = decode_report(data, "r.json", first_page=200)
    assert len(report["operators"]) == 200 and len(pending) == 2300
    parts = list(pending.split())
    assert [len(part) for part in parts] == [1000, 1000, 300] and len(pending) == 0
    decoded = [row for part in parts for row in part.decode()]
    assert decoded == full["operators"][200:]
    assert report["operators"] == full["operators"][:200]
    whole = {**report, "operators": report["operators"] + decoded}
    assert whole == full  # every key, in the file's order, and all 2,500 rows
    assert list(report) == list(full)
    assert parts[0].decode() == []  # handed out once


@pytest.mark.parametrize("rows", [0, 1, 9, 10, 11])
def test_first_pages_of_any_length_cut_between_rows(rows):
    data = _ours(minimal(operators=_operators(rows)))
    report, pending = decode_report(data, "r.json", first_page=10)
    assert report["operators"] == _operators(rows)[:10]
    assert [row for part in pending.split() for row in part.decode()] == _operators(rows)[10:]
    assert report["operators"] == _operators(rows)[:10]  # the page stays a page: no alias


@pytest.mark.parametrize(
    "layout",
    [
        b'[\n  {"operator": "a"}, {"operator": "b"},\n  {"operator": "c"}\n ]',  # 2 on a line
        b'[\n  {"operator": "a"}\n  ,{"operator": "b"}\n  ,{"operator": "c"}\n ]',  # comma ahead
        b'[\n  {"operator":\n  "a"},\n  {"operator": "b"},\n  {"operator": "c"}\n ]',  # split
    ],
)
def test_rows_not_a_line_each_are_still_read_right(layout):
    """A hand-edited file whose rows are not one per line: the line cut is refused and
    the rows are split by decoding, with the same result as decoding the whole file."""
    fields = b', "input_shapes": [], "calls": 1, "cpu_self_seconds": 0.0, '
    fields += b'"device_self_seconds": null, "cpu_net_bytes": 0}'
    for name in (b'"a"}', b'"b"}', b'"c"}'):
        layout = layout.replace(name, name[:-1] + fields)
    data = b'{"schema": "%s", "schema_version": 1, "operators": %s, "context": {}}' % (
        SCHEMA_NAME.encode(),
        layout,
    )
    full, _ = decode_report(data, "r.json")
    for page in (1, 2, 3):
        report, pending = decode_report(data, "r.json", first_page=page)
        rest = [row for part in pending.split() for row in part.decode()]
        assert {**report, "operators": report["operators"] + rest} == full


@pytest.mark.parametrize(
    "content",
    [
        b'{"schema": "torchscan-tui/report", "operators": [{"a": 1}, ',
        b'{"schema": "torchscan-tui/report", "schema_version": 1, "operators": 3}',
        b"[1, 2]",
        b'{"schema": "torchscan-tui/report", "schema_version": 99, "operators": []}',
        b'{"schema": "torchscan-tui/report", "schema_version": 1, "operators": [], "context": {}}',
    ],
)
def test_paged_opening_says_what_whole_opening_says(tmp_path, content):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    outcomes = []
    for first_page in (None, 10):
        try:
            report, _, pending, _ = open_profile_paged(path, first_page=first_page)
            outcomes.append((report, len(pending)))
        except ReportError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_rows_damaged_past_the_first_page_are_found_when_split():
    """A report as we write it is cut without scanning the rows after the first page:
    damage there shows when they are split (after the first frame), as a ValueError;
    opening it whole still refuses it at once."""
    text = dumps_report(minimal(operators=_operators(50), context={"note": "kept"}))
    data = text.replace('"op30"', '"op30', 1).encode()  # a string left open: not JSON
    with pytest.raises(ValueError):
        decode_report(data, "r.json")
    report, pending = decode_report(data, "r.json", first_page=10)
    assert report["operators"] == _operators(10) and report["context"] == {"note": "kept"}
    with pytest.raises(ValueError):
        len(pending)


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_a_truncated_report_is_refused_before_anything_shows(tmp_path, keep):
    """Cut anywhere (a copy that stopped), the rows' end and the keys after them are
    gone: the layout is not recognised, the whole file is scanned, and refused at once."""
    data = dumps_report(minimal(operators=_operators(400))).encode()
    path = tmp_path / "r.json"
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ReportError, match="is not valid JSON"):
        open_profile_paged(path, first_page=10)


@pytest.mark.parametrize(
    "tail",
    [
        b'\n ],\n "context": {}\n}',  # ours
        b'\n ],\n "context": {}, "context": {}\n}',  # a key twice: still one document
        # the end's text inside a string, escaped:
        b'\n ],\n "context": {},\n "extra": "\\n ],\\n \\"context\\": "\n}',
    ],
)
def test_the_rows_end_is_found_whatever_follows_them(tail):
    """The rows' end is the last line break, one space and ``],`` before ``"context"``;
    the same text inside a JSON string is escaped (no raw line break) and never matches."""
    rows = b",\n  ".join(json.dumps(row).encode() for row in _operators(30))
    head = b'{\n "schema": "%s",\n "schema_version": 1,\n "operators": [\n  ' % SCHEMA_NAME.encode()
    data = head + rows + tail
    full, _ = decode_report(data, "r.json")
    report, pending = decode_report(data, "r.json", first_page=7)
    assert [row for part in pending.split() for row in part.decode()] == _operators(30)[7:]
    assert report == {**full, "operators": full["operators"][:7]}


def test_a_comparison_opened_as_a_report_says_how_to_see_it(tmp_path):
    """The JSON of --compare --json is not a report; the message gives the command that
    shows it, with its two runs' paths quoted for the shell."""
    path = tmp_path / "diff.json"
    diff = compare_reports(minimal(), minimal(), "runs/before one.json", "after.json")
    path.write_text(json.dumps(diff))
    with pytest.raises(ReportError) as caught:
        load_report(path)
    message = str(caught.value)
    assert message.startswith(f"{path} is a comparison")
    assert message.endswith("torchscan-tui --compare 'runs/before one.json' after.json")
