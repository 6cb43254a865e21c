"""A trace cut short opens up to its cut, marked incomplete; damage before the end does not.

The oracle: a trace cut inside event K reads as the same trace written whole with only
its first K events (made here by re-encoding the parsed file, not by cutting bytes).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import assert_refused_in_one_line

from torchscan_tui.formats.opening import open_profile

TRACE = Path(__file__).parent / "data" / "cpu_trace.json"


def _event_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of each event of the file's ``traceEvents`` array."""
    text = data.decode()
    decoder = json.JSONDecoder()
    position = text.index("[", text.index('"traceEvents"')) + 1
    spans = []
    while True:
        while text[position] in " \n\t,":
            position += 1
        if text[position] == "]":
            return spans
        _, end = decoder.raw_decode(text, position)
        spans.append((position, end))
        position = end


def _whole_with_first(events: int, folder: Path) -> dict:
    """The report of the same trace, written whole, holding only its first ``events``."""
    document = json.loads(TRACE.read_text())
    document["traceEvents"] = document["traceEvents"][:events]
    path = folder / "whole.json"
    path.write_text(json.dumps(document))
    report, _ = open_profile(path)
    return report


@pytest.mark.parametrize("event", [12, 20, 30])
@pytest.mark.parametrize("where", ["first byte", "middle", "last byte"])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_trace_cut_inside_an_event_reads_as_its_whole_events(tmp_path, event, where, suffix):
    data = TRACE.read_bytes()
    start, end = _event_spans(data)[event]
    cut = {"first byte": start + 1, "middle": (start + end) // 2, "last byte": end - 1}[where]
    path = tmp_path / f"cut{suffix}"
    if suffix == ".json":
        path.write_bytes(data[:cut])
    else:  # the job died while writing: no end of stream, no trailer (its last 8 bytes)
        path.write_bytes(gzip.compress(data[:cut])[:-8])
    report, _ = open_profile(path)
    expected = _whole_with_first(event, tmp_path)
    assert report["operators"] == expected["operators"]
    assert report["context"] == expected["context"]
    assert report["operators"] and report["run"]["complete"] is False
    note = report["diagnostics"][0]
    assert note["code"] == "trace_truncated" and str(path) in note["message"]
    assert f"the {report['context']['events']:,} events written before the cut" in note["message"]
    assert report["run"]["note"] == note["message"]


@pytest.mark.parametrize("share", [0.6, 0.8, 0.95])
def test_a_gzip_stream_cut_mid_block_opens_what_it_held(tmp_path, share):
    whole = gzip.compress(TRACE.read_bytes())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: int(len(whole) * share)])
    report, _ = open_profile(path)
    assert report["operators"] and report["diagnostics"][0]["code"] == "trace_truncated"


def test_a_trace_cut_right_after_an_event_keeps_that_event(tmp_path):
    data = TRACE.read_bytes()
    _, end = _event_spans(data)[20]
    path = tmp_path / "cut.json"
    path.write_bytes(data[:end] + b",\n")
    report, _ = open_profile(path)
    assert report["context"] == _whole_with_first(21, tmp_path)["context"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("cut before the first event", "is not valid JSON"),
        ("damaged in the middle", "is not valid JSON"),
        ("cut inside the header", "is not valid JSON"),
        ("cut before the first profiler event", "is cut short before its first profiler event"),
    ],
)
def test_damage_other_than_a_cut_end_is_still_refused(tmp_path, damage, message):
    data = TRACE.read_bytes()
    spans = _event_spans(data)
    if damage == "cut before the first event":
        data = data[: spans[0][0] + 3]
    elif damage == "damaged in the middle":
        middle = spans[len(spans) // 2][0]
        data = data[:middle] + b"#" + data[middle + 1 : spans[-2][1] + 5]
    elif damage == "cut inside the header":
        data = data[: data.index(b'"traceEvents"') - 10]
    else:  # only metadata events (process and thread names) before the cut
        data = data[: spans[3][1] + 20]
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    assert_refused_in_one_line(open_profile, path, message)


def test_a_gz_that_is_not_gzip_says_so(tmp_path):
    path = tmp_path / "plain.json.gz"
    path.write_bytes(TRACE.read_bytes())
    assert_refused_in_one_line(open_profile, path, "cannot be decompressed .*: it is not gzip")


def test_a_whole_trace_is_not_marked(tmp_path):
    report, _ = open_profile(TRACE)
    assert report["run"] == {"complete": True}
    assert "trace_truncated" not in {note["code"] for note in report["diagnostics"]}
