"""Malformed reports and traces are refused in one line naming the file and the field
(issue 16, point 3): wrong types, missing keys, nesting 900 or 5,000 deep, absurd times."""

from __future__ import annotations

import json

import pytest
from conftest import assert_refused_in_one_line

from torchscan_tui.opening import open_profile
from torchscan_tui.report import SCHEMA_NAME, SCHEMA_VERSION

ROW = {
    "operator": "aten::mm",
    "input_shapes": [[4, 8], [8, 2]],
    "kind": "operator",
    "calls": 1,
    "cpu_self_seconds": 0.001,
    "device_self_seconds": None,
    "cpu_net_bytes": 0,
}


def _report(**fields) -> dict:
    report = {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "operators": [ROW],
        "context": {},
        "diagnostics": [],
        "totals": {},
    }
    return {**report, **fields}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("report", "message"),
    [
        (_report(operators=[ROW, {**ROW, "cpu_self_seconds": "soon"}]),
         r"row 2: cpu_self_seconds: Expected `float`, got `str`"),
        (_report(operators=["a row"]), r"row 1: Expected `object`, got `str`"),
        (_report(totals="x"), r"totals: Expected `object \| null`, got `str`"),
        (_report(diagnostics=[5]), r"diagnostics\[0\]: Expected `object`, got `int`"),
        (_report(operators=[{k: v for k, v in ROW.items() if k != "calls"}]),
         "missing required field `calls`"),
        (_report(totals={"process_peak_rss": {"value": "big"}}),
         "totals.process_peak_rss.value: Expected `float`"),
        (_report(kernels=[{"kernel": 1}]), r"kernels\[0\]"),
    ],
)  # fmt: skip
def test_wrong_types_and_missing_keys_are_refused_naming_the_field(tmp_path, report, message):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert_refused_in_one_line(open_profile, path, message)


def test_a_newer_writers_extra_fields_pass_through(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report(operators=[{**ROW, "per_step": [1, 2]}], extra={})))
    report, _ = open_profile(path)
    assert report["operators"][0]["per_step"] == [1, 2]


@pytest.mark.parametrize("depth", [900, 5000])
def test_deep_nesting_is_refused_before_any_widget_sees_it(tmp_path, depth):
    path = tmp_path / "deep.json"
    text = json.dumps(_report()).replace("[[4, 8], [8, 2]]", _nested(depth))
    path.write_text(text)
    message = "input_shapes" if depth == 900 else "nests its JSON too deeply"
    assert_refused_in_one_line(open_profile, path, message)


def test_a_trace_with_input_dims_nested_900_deep_is_refused(tmp_path):
    event = {"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 1, "dur": 1,
             "args": {"Input Dims": json.loads(_nested(900))}}  # fmt: skip
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [event]}))
    assert_refused_in_one_line(open_profile, path, "Input Dims are not shapes")


@pytest.mark.parametrize("duration", [1e308, -5])
def test_absurd_durations_are_refused(tmp_path, duration):
    event = {"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 1, "dur": duration}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [event]}))
    assert_refused_in_one_line(open_profile, path, "out of range")
