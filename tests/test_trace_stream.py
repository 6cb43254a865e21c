"""A trace read a piece at a time (formats/trace/stream.py) gives the report the file gives
read whole, and what the pieces cannot follow is read whole (issue 31, point 1)."""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stacked_trace import write_stacked_memory_trace

from torchscan_tui.formats import opening
from torchscan_tui.formats.jsonio import file_chunks
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import read_file, save_report
from torchscan_tui.formats.trace import stream
from torchscan_tui.formats.trace.decode import decode_trace
from torchscan_tui.formats.trace.reader import report_from_trace

DATA = Path(__file__).parent / "data"
# The two biggest take seconds: kept out of the fast subset.
REAL_TRACES = [
    pytest.param(  # call stacks, [memory], kernels, 2021 fields
        "resnet50_2021_cuda.pt.trace.json.gz", marks=pytest.mark.slow
    ),
    pytest.param(  # A100, shapes, module hierarchy, flows
        "trace_diff_control.json.gz", marks=pytest.mark.slow
    ),
    "alexnet_cuda.json.gz",
    "mtia_inference.json.gz",
    "rocm_minitoy.json.gz",
    "cpu_trace.json",
    "backward_thread.json",
]


def _whole(path: Path) -> dict:
    """The report of the file decoded whole (what opening did for every trace before)."""
    source = str(path)
    return report_from_trace(decode_trace(read_file(source)), source)


def _canonical(report: dict) -> str:
    return json.dumps(report, sort_keys=True, default=str)


@pytest.mark.parametrize("name", REAL_TRACES)
def test_a_real_trace_read_in_pieces_gives_the_report_read_whole(name, monkeypatch):
    path = DATA / name
    size = len(read_file(str(path)))  # some 50 pieces each
    monkeypatch.setattr(stream, "BATCH_BYTES", max(size // 100, 1024))
    monkeypatch.setattr(stream, "BOUNDARY_WINDOW", max(size // 400, 512))
    pieces: list[int] = []
    original = stream.stream_trace

    def counted(chunks, consume):
        return original(chunks, lambda batch: (pieces.append(len(batch)), consume(batch)))

    stream_trace, stream.stream_trace = stream.stream_trace, counted
    try:
        streamed = open_profile(path)[0]
    finally:
        stream.stream_trace = stream_trace
    assert len(pieces) > 3, "read in pieces, not as a fallback"
    assert _canonical(streamed) == _canonical(_whole(path))


@pytest.mark.slow  # a torch profile written first: seconds
def test_a_with_stack_memory_trace_read_in_pieces_gives_the_report_read_whole(
    tmp_path, small_pieces
):
    """torch 2.x's python_function frames, nn.Module events and [memory] instants."""
    path = write_stacked_memory_trace(tmp_path / "stacked.json")
    streamed = open_profile(path)[0]
    assert streamed["context"]["call_sites"] and streamed["memory"] and streamed["modules"]
    assert _canonical(streamed) == _canonical(_whole(path))


def _trace(events: list, **fields) -> bytes:
    return json.dumps({"schemaVersion": 1, **fields, "traceEvents": events}).encode()


def _op(name: str, ts: int, dur: int, **args) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"Input Dims": [[2, 2]], **args}}  # fmt: skip


def test_a_brace_comma_brace_inside_a_name_or_args_is_never_taken_for_a_cut(tmp_path, small_pieces):
    """``}, {`` in names, and between objects nested in args, fill every piece's end: only
    a cut whose text decodes as whole events is taken."""
    events = [
        _op("step}, {" * 40 + str(i), 10 * i, 5, extra=[{"a": "}, {"}, {"b": 1}] * 30)
        for i in range(400)
    ]
    path = tmp_path / "braces.json"
    path.write_bytes(_trace(events, host_name="h}, {"))
    streamed = open_profile(path)[0]
    assert len(streamed["operators"]) == 400
    assert _canonical(streamed) == _canonical(_whole(path))


def test_events_a_consumer_keeps_still_read_as_the_file_wrote_them(tmp_path, small_pieces):
    """The pieces are decoded where they lie in one buffer, and an event's Input Dims stay
    a view of it: a consumer that keeps every event (the buffer is then never resized in
    place, see stream._dropped) still reads each one's shapes as written, after the
    whole file has gone through the buffer."""
    events = [_op(f"op{i}", 10 * i, 5) for i in range(2000)]
    for i, event in enumerate(events):
        event["args"]["Input Dims"] = [[i, i % 7], [], [3]]
    path = tmp_path / "kept.json"
    path.write_bytes(_trace(events))
    kept: list = []
    header = stream.stream_trace(file_chunks(str(path)), kept.append)
    assert header.events == [] and len(kept) > 10, "read in many pieces"
    decoded = [event for batch in kept for event in batch]
    assert [event.name for event in decoded] == [event["name"] for event in events]
    assert [json.loads(bytes(event.args.input_dims)) for event in decoded] == [
        event["args"]["Input Dims"] for event in events
    ]


@pytest.mark.parametrize(
    "damage",
    [
        "bom",  # a byte order mark: read as json.loads reads it
        "late_key",  # the event array starts past the first MiB
        "twice",  # a second traceEvents after the first
        "cut",  # cut short: read up to the cut and marked incomplete
        "not_objects",  # events that are not objects: the generic decoder's
    ],
)
def test_what_the_pieces_cannot_follow_is_read_whole(tmp_path, damage, small_pieces):
    events = [_op(f"op{i % 7}", 10 * i, 5) for i in range(300)]
    data = _trace(events)
    if damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "late_key":
        data = _trace(events, padding="x" * (2 << 20))
        assert data.index(b"traceEvents") > stream.HEAD_LIMIT
    elif damage == "twice":
        data = data[:-1] + b', "traceEvents": ' + json.dumps(events[:3]).encode() + b"}"
    elif damage == "cut":
        data = data[: len(data) // 2]
    elif damage == "not_objects":
        data = _trace([*events, 7, "x"])
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    assert opening._streamed_trace(str(path), lambda *_: None) is None
    report = open_profile(path)[0]
    assert report["operators"]
    assert report["run"]["complete"] is (damage != "cut")
    if damage == "twice":  # as msgspec reads a repeated key: the last one
        assert sum(row["calls"] for row in report["operators"]) == 3


def test_a_gzip_trace_streams_and_a_cut_gzip_is_read_up_to_its_cut(tmp_path, small_pieces):
    events = [_op(f"op{i % 5}", 10 * i, 5) for i in range(2000)]
    whole = gzip.compress(_trace(events))
    path = tmp_path / "trace.json.gz"
    path.write_bytes(whole)
    assert opening._streamed_trace(str(path), lambda *_: None) is not None
    assert sum(row["calls"] for row in open_profile(path)[0]["operators"]) == 2000
    path.write_bytes(whole[: len(whole) // 2])
    report = open_profile(path)[0]
    assert report["run"]["complete"] is False
    assert 0 < sum(row["calls"] for row in report["operators"]) < 2000


def test_a_thread_written_as_a_float_is_one_thread_however_its_piece_was_decoded(
    tmp_path, small_pieces
):
    """Pieces are decoded plainly until one needs exact times (formats/trace/decode.py):
    a tid written ``7.0`` is thread 7 in both, so an op in an early piece still holds
    the ops of a late one."""
    late_start = 2**44  # past 2**43 us a float loses the nanoseconds: read exactly
    outer = _op("outer", 0, late_start + 10_000)
    early = [_op("aten::mm", 10 * i + 1, 5) for i in range(200)]
    late = [_op("aten::mm", late_start + 10 * i, 5) for i in range(200)]
    events = [outer, *early, *late]
    for event in events:
        event["tid"] = 7.0
    text = _trace(events).decode()
    for event in late:  # a fraction on each late time
        text = text.replace(f'"ts": {event["ts"]},', f'"ts": {event["ts"]}.5,')
    path = tmp_path / "float_tids.json"
    path.write_text(text)
    report = open_profile(path)[0]
    assert _canonical(report) == _canonical(_whole(path))
    rows = {row["operator"]: row for row in report["operators"]}
    assert rows["aten::mm"]["calls"] == 400
    children = 400 * 5e-6
    assert rows["outer"]["cpu_self_seconds"] == pytest.approx(
        (late_start + 10_000) * 1e-6 - children
    )


def test_a_saved_report_opens_without_importing_the_trace_machinery(tmp_path):
    """The streamed reader looks at the first bytes before importing anything of the
    trace's (a report's open is the first paint's: ~25 ms of imports)."""
    report = tmp_path / "saved.json"
    opened = open_profile(DATA / "cpu_trace.json")[0]
    save_report(opened, report)
    code = (
        "import sys\n"
        "from torchscan_tui.formats.opening import open_profile_paged\n"
        f"open_profile_paged({str(report)!r})\n"
        "print([m for m in sys.modules if m.startswith('torchscan_tui.formats.trace')])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_an_id_past_64_bits_keeps_every_column_aligned(tmp_path):
    """Times and ids are 8-byte arrays until one does not fit (formats/trace/columns.py):
    the column turns into a list holding each event's value once, in order."""
    events = [_op("aten::mm", 10 * i, 5, **{"External id": i + 1}) for i in range(6)]
    events[3]["args"]["External id"] = 2**64 + 7
    path = tmp_path / "big_id.json"
    path.write_bytes(_trace(events))
    streamed = opening._streamed_trace(str(path), lambda *_: None)
    assert streamed is not None
    columns = streamed[1].columns
    assert list(columns.correlation_ids) == [1, 2, 3, 2**64 + 7, 5, 6]
    assert len(columns.names) == len(columns.starts) == len(columns.correlation_ids) == 6
    (row,) = open_profile(path)[0]["operators"]
    assert row["calls"] == 6


@pytest.mark.parametrize("event_bytes", [40, 300, 3000, 30_000])
def test_a_pieces_boundaries_are_the_nearest_ones_whatever_the_events_size(event_bytes):
    """The boundaries tried for a cut are the nearest few to the piece's end, found in a
    short window first and a wider one only where it holds too few (stream._boundaries):
    the same as searching the whole wide window, for small events and for events bigger
    than either window."""

    def wide_search(text, start, limit):  # what one search of the wide window gives
        near = max(start, limit - stream.BOUNDARY_WINDOW)
        found = [m.start() for m in re.finditer(rb"\}\s*,\s*\{", text[:limit])
                 if m.start() >= near and m.end() <= limit]  # fmt: skip
        if not found and near > start:
            found = [m.start() for m in re.finditer(rb"\}\s*,\s*\{", text[:limit])
                     if m.start() >= start]  # fmt: skip
        return found[::-1][: stream.TRIES]

    chance = random.Random(event_bytes)
    events = [
        json.dumps({"name": "x" * chance.randrange(1, event_bytes), "ph": "X"}).encode()
        for _ in range(400)
    ]
    text = b"[" + b", ".join(events) + b"]"
    for _ in range(200):
        start = chance.randrange(1, len(text) // 2)
        limit = chance.randrange(start, len(text))
        assert stream._boundaries(text, start, limit) == wide_search(text, start, limit)
