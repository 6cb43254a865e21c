"""Report save/load: atomic, no clobbering, clear one-line errors."""

from __future__ import annotations

import json
import math

import pytest

from torchscan_tui.atomic import DestinationExists, ExportError
from torchscan_tui.report import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    ReportError,
    load_report,
    save_report,
)


def minimal(**extra):
    report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": [],
        "context": {},
        "diagnostics": [],
        "totals": {},
    }
    report.update(extra)
    return report


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
        ('{"a": 1}', "is not a torchscan-tui report"),
        (json.dumps(minimal(schema_version=SCHEMA_VERSION + 1)), "newer torchscan-tui"),
    ],
)
def test_load_errors_are_one_line(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReportError, match=expected) as caught:
        load_report(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_missing_report(tmp_path):
    with pytest.raises(ReportError, match="does not exist"):
        load_report(tmp_path / "nope.json")
