"""Issue 29 (the part built): each row's call sites and the by-line view, from a trace's
``Call stack`` (torch.profiler with_stack), checked against the trace itself and the
TensorBoard plugin's expected operator view."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from torchscan_tui.analysis.sites import (
    by_line,
    call_sites,
    parse_site,
    site_rows,
    split_stack,
    user_frame,
)
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.ui.editor import editor_command, find_source

DATA = Path(__file__).parent / "data"
RESNET = DATA / "resnet50_2021_cuda.pt.trace.json.gz"
TORCH = "/home/u/env/lib/python3.7/site-packages/torch/nn/modules/conv.py(443): forward"


def test_a_call_site_is_the_innermost_frame_in_the_users_files():
    stack = f"{TORCH};/usr/lib/python3.11/runpy.py(88): _run_code;train.py(46): <module>"
    assert user_frame(stack) == "train.py(46): <module>"
    assert user_frame(f"{TORCH};/home/u/proj/model.py(12): forward;train.py(46): <module>") == (
        "/home/u/proj/model.py(12): forward"
    )
    assert user_frame(TORCH) is None  # only torch's frames: no site
    assert call_sites([None, "", None]) == []  # no stacks at all: no column
    # grouping keeps the stacks (a site's frames are shown from them), the site read later
    assert call_sites([stack, None, TORCH]) == [stack, None, None]
    assert split_stack(stack) == ([TORCH, "/usr/lib/python3.11/runpy.py(88): _run_code"],
                                  "train.py(46): <module>", [])  # fmt: skip
    nested = f"{TORCH};/home/u/proj/model.py(12): forward;{TORCH};train.py(46): <module>"
    assert split_stack(nested) == ([TORCH], "/home/u/proj/model.py(12): forward",
                                   ["train.py(46): <module>"])  # fmt: skip
    assert site_rows({stack: 3, "train.py(46): <module>": 1}, 8) == [
        {"site": "train.py(46): <module>", "cpu_self_seconds": 4e-9, "share": 0.5, "stack": stack}
    ]
    assert parse_site("train.py(46): <module>") == ("train.py", 46, "<module>")
    assert parse_site("<built-in method foo>") is None


def _innermost_user_frames(name: str) -> set[str]:
    """From the trace's JSON, not our reader: each event's innermost frame outside
    site-packages."""
    with gzip.open(RESNET, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    frames = set()
    for event in events:
        if event.get("name") == name and "Call stack" in (event.get("args") or {}):
            for frame in event["args"]["Call stack"].split(";"):
                if "site-packages" not in frame:
                    frames.add(frame)
                    break
    return frames


@pytest.fixture(scope="module")
def resnet():
    report, _ = open_profile(RESNET)
    return report


def test_a_rows_sites_hold_its_self_time_where_the_trace_says_it_was_called(resnet):
    """aten::cudnn_convolution: every call from the script's line 46 (the forward pass,
    as the trace's own stacks say); its sites' CPU self time adds up to the plugin's
    host self duration for the operator."""
    assert _innermost_user_frames("aten::cudnn_convolution") == {
        "resnet50_profiler_api.py(46): <module>"
    }
    rows = [r for r in resnet["operators"] if r["operator"] == "aten::cudnn_convolution"]
    expected = json.loads((DATA / "resnet50_2021_cuda.expected_operator_view.json").read_text())
    (plugin,) = [op for op in expected["operators"] if op["name"] == "aten::cudnn_convolution"]
    seconds = defaultdict(float)
    for row in rows:
        for site in row["sites"]:
            seconds[site["site"]] += site["cpu_self_seconds"]
    assert set(seconds) == {"resnet50_profiler_api.py(46): <module>"}
    assert sum(seconds.values()) * 1e6 == pytest.approx(plugin["host_self_duration"], abs=1)
    assert resnet["context"]["call_sites"] is True


def test_the_by_line_view_sums_every_rows_sites_largest_first(resnet):
    lines = by_line(resnet["operators"])
    totals = [line["cpu_self_seconds"] for line in lines]
    assert totals == sorted(totals, reverse=True)
    sites_total = sum(site["cpu_self_seconds"] for row in resnet["operators"]
                      for site in row.get("sites") or [])  # fmt: skip
    assert sum(totals) == pytest.approx(sites_total)
    for line in lines:
        assert sum(line["operators"].values()) == pytest.approx(line["cpu_self_seconds"])
    # The script's lines: the data loading (42), the forward pass (46), the optimizer (51).
    assert {line["line"] for line in lines[:4]} >= {42, 46, 51}
    assert lines[0]["file"] == "resnet50_profiler_api.py"


def test_a_trace_without_stacks_has_no_sites():
    report, _ = open_profile(DATA / "alexnet_cuda.json.gz")
    assert not any(row.get("sites") for row in report["operators"])
    assert report["context"]["call_sites"] is False


@pytest.mark.parametrize(
    ("editor", "command"),
    [
        ("vim", ["vim", "+12", "/p/t.py"]),
        ("nvim -u NONE", ["nvim", "-u", "NONE", "+12", "/p/t.py"]),
        ("emacs -nw", ["emacs", "-nw", "+12", "/p/t.py"]),
        ("nano", ["nano", "+12", "/p/t.py"]),
        ("code --wait", ["code", "--wait", "-g", "/p/t.py:12"]),
        ("/usr/local/bin/subl -w", ["/usr/local/bin/subl", "-w", "/p/t.py:12"]),
    ],
)
def test_each_editor_is_asked_for_the_line_its_own_way(editor, command):
    assert editor_command(editor, "/p/t.py", 12) == command


def test_a_relative_file_is_found_beside_the_profile_or_not_at_all(tmp_path):
    (tmp_path / "train.py").write_text("pass\n")
    assert find_source("train.py", [tmp_path / "nowhere", tmp_path]) == tmp_path / "train.py"
    assert find_source("gone.py", [tmp_path]) is None
    assert find_source(str(tmp_path / "train.py"), []) == tmp_path / "train.py"


def test_sites_reach_the_exports_as_one_cell(resnet):
    from torchscan_tui.formats.export import rows_to_csv

    (row,) = [r for r in resnet["operators"] if r["operator"] == "aten::cudnn_convolution"][:1]
    text = rows_to_csv([row])
    assert "sites" in text.splitlines()[0].split(",")
    assert "resnet50_profiler_api.py(46): <module> 100%" in text


def test_the_text_summary_names_the_top_source_lines(resnet):
    from torchscan_tui.formats.text_summary import report_text

    text = report_text(resnet, "resnet.json", resnet["operators"])
    start = text.index("source lines (CPU self time by the line of your code")
    first = text[start:].splitlines()[1]
    assert first.strip().split("  ")[1] == "resnet50_profiler_api.py(42): <module>"
