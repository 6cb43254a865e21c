"""A big trace's first rows before all of it is read (formats/early_rows.py), the source
that reads a trace in the app (run/trace_source.py) and which files it takes
(issue 31, point 1: a 1M-event trace's first painted rows within 3 s)."""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
from collections import Counter
from pathlib import Path

import pytest

from torchscan_tui.formats import opening
from torchscan_tui.formats.early_rows import EarlyRows, ReadingStopped
from torchscan_tui.formats.opening import open_profile, open_profile_paged, opens_in_app
from torchscan_tui.formats.report import save_report
from torchscan_tui.formats.trace import halves, stream
from torchscan_tui.run.events import (
    PhaseChanged,
    ProfileMeta,
    RowsReplaced,
    RunFinished,
)
from torchscan_tui.run.trace_source import TraceSource


@pytest.fixture
def trace(trace_in_pieces) -> Path:
    return trace_in_pieces


def _calls(report: dict) -> Counter:
    return Counter(
        {
            (row["operator"], json.dumps(row["input_shapes"])): row["calls"]
            for row in report["operators"]
        }
    )


def _canonical(report: dict) -> str:
    return json.dumps(report, sort_keys=True, default=str)


def test_the_part_read_is_handed_over_once_and_the_whole_report_is_unchanged(trace):
    handed: list[dict] = []
    early = EarlyRows(str(trace), handed.append, after_s=0.0)
    opened = open_profile_paged(trace, first_page=None, early=early)

    assert len(handed) == 1, "once, after the first piece"
    part, whole = handed[0], opened.report
    assert _canonical(whole) == _canonical(open_profile(trace)[0]), "the whole as before"
    note = part["diagnostics"][0]
    assert note["code"] == "early_rows" and str(trace) in note["message"]
    assert part["run"] == {"complete": False, "note": note["message"]}
    assert not {"overview", "memory", "modules"} & part.keys(), "rows first, no summaries"
    assert part["kernels"] == [] and whole["kernels"], "k waits for the whole"
    # Kineto writes the operators first, the kernels after (from 37% of this file on):
    # the part's device time is missing, said to come; it never says "no GPU kernels".
    assert part["context"]["device_events"] == 0 and "device" not in part["context"]
    assert "device time comes with the rest" in note["message"]
    codes = [n["code"] for n in part["diagnostics"]]
    assert "no_device_events_in_trace" not in codes
    assert codes[1:] == [
        n["code"] for n in whole["diagnostics"] if n["code"] == "no_shapes_recorded"
    ]
    assert all(row["device_self_seconds"] is None for row in part["operators"])
    assert whole["context"]["device"] == "cuda"
    # The part's rows are the first events': fewer calls, none the whole has not.
    part_calls, whole_calls = _calls(part), _calls(whole)
    assert 0 < part["context"]["events"] < whole["context"]["events"]
    assert sum(part_calls.values()) < sum(whole_calls.values())
    assert all(calls <= whole_calls[key] for key, calls in part_calls.items())


def test_the_parts_rows_are_those_of_a_trace_of_its_events_alone(trace, tmp_path, monkeypatch):
    """Grouped as any trace is: a file holding only the events read by then, opened the
    usual way, gives the same rows."""
    pieces: list[int] = []
    original = stream.stream_trace

    def counted(chunks, consume):
        return original(chunks, lambda batch: (pieces.append(len(batch)), consume(batch)))

    monkeypatch.setattr(stream, "stream_trace", counted)
    handed: list[dict] = []
    open_profile_paged(trace, first_page=None, early=EarlyRows(str(trace), handed.append, 0.0))
    document = json.loads(trace.read_text())
    document["traceEvents"] = document["traceEvents"][: pieces[0]]
    alone = tmp_path / "first_piece.json"
    alone.write_text(json.dumps(document))
    assert pieces[0] < sum(pieces) and handed[0]["operators"]
    assert handed[0]["operators"] == open_profile(alone)[0]["operators"]


@pytest.fixture
def splits(monkeypatch, split_any_size) -> list:
    """Every trace file is read in halves (formats/trace/halves.py); each read's
    SplitRead (None where it was not split) is recorded here."""
    recorded: list = []
    read_in_halves = halves.read_in_halves

    def recording(*args, **kwargs):
        recorded.append(read_in_halves(*args, **kwargs))
        return recorded[-1]

    monkeypatch.setattr(halves, "read_in_halves", recording)
    return recorded


def test_a_trace_read_in_halves_hands_over_its_first_halfs_part(trace, splits):
    """The app reads a big trace as the command does, its second half in a child
    (formats/trace/halves.py): the part handed over comes from the first half, its share
    said of the whole file, and the whole report is one reader's."""
    handed: list[dict] = []
    early = EarlyRows(str(trace), handed.append, after_s=0.0)
    opened = open_profile_paged(trace, first_page=None, early=early)

    (split,) = splits
    assert split is not None and split.second_half_pid != os.getpid(), "read by a child"
    assert len(handed) == 1
    whole = opened.report
    assert _canonical(whole) == _canonical(open_profile(trace, fork=False)[0])
    # Shares of the file, not of the half: the first half ends near the middle (1.0
    # were it of the half), and the part was handed over after its first pieces.
    assert 0.45 < early.read_share < 0.55
    said = re.search(r"\((\d+)% of the file read\)", handed[0]["diagnostics"][0]["message"])
    assert said is not None and 0 < int(said.group(1)) <= 25
    part_calls, whole_calls = _calls(handed[0]), _calls(whole)
    assert 0 < sum(part_calls.values()) < sum(whole_calls.values())
    assert all(calls <= whole_calls[key] for key, calls in part_calls.items())


def test_nothing_is_handed_over_before_its_time_or_late_in_the_file(trace):
    handed: list[dict] = []
    open_profile_paged(trace, first_page=None, early=EarlyRows(str(trace), handed.append))
    assert handed == [], "read in well under a second: the whole comes first"

    clock = iter(range(1000)).__next__  # a second a piece: due at the first
    late = EarlyRows(str(trace), handed.append, after_s=1.0, clock=clock)
    late.read_share = 0.7
    late.listen = lambda progress: progress  # type: ignore[method-assign]  # stays at 0.7
    open_profile_paged(trace, first_page=None, early=late)
    assert handed == [] and late.handed_over, "past LATE_SHARE of the file: the whole soon"


def test_a_stopped_reading_ends_at_its_next_piece(trace):
    early = EarlyRows(str(trace), lambda report: None)
    early.stop()
    with pytest.raises(ReadingStopped):
        open_profile_paged(trace, first_page=None, early=early)


def _events_of(source: TraceSource) -> list:
    events: list = list(source.ready_events())
    source.run(events.append)
    return events


def test_the_source_sends_the_parts_rows_then_the_whole_reports(trace):
    source = TraceSource(str(trace), early_after_s=0.0)
    events = _events_of(source)
    try:
        kinds = [type(event).__name__ for event in events]
        assert isinstance(events[0], PhaseChanged) and events[0].phase == "reading"
        replaced = [event for event in events if isinstance(event, RowsReplaced)]
        heads = [event.head for event in events if isinstance(event, ProfileMeta)]
        assert len(replaced) == 2 and len(heads) == 2, kinds
        assert heads[0]["diagnostics"][0]["code"] == "early_rows"
        whole = open_profile(trace)[0]
        assert replaced[1].rows == whole["operators"]
        assert "early_rows" not in {note["code"] for note in heads[1]["diagnostics"]}
        phases = [event.phase for event in events if isinstance(event, PhaseChanged)]
        assert phases[-2:] == ["grouping", "opened"]
        end = events[-1]
        assert isinstance(end, RunFinished) and end.outcome == "done" and end.complete
        assert end.message == f"{len(whole['operators'])} rows from a trace"
        assert end.trace is not None and end.trace.open, "held open for t to export"
        assert source.device == "cuda"
    finally:
        source.cleanup()
    assert not end.trace.open, "closed when the app leaves"


def test_the_app_reads_a_big_trace_on_two_cores_as_the_command_does(trace, splits):
    """The source (the app's reading) splits the file and makes the summaries beside the
    grouping, as ``--json`` does: the same report, the second half read by a child."""
    source = TraceSource(str(trace), early_after_s=0.0)
    try:
        events = _events_of(source)
    finally:
        source.cleanup()
    (split,) = splits
    assert split is not None and split.second_half_pid != os.getpid()
    whole = [event for event in events if isinstance(event, RowsReplaced)][-1]
    assert whole.rows == open_profile(trace, fork=False)[0]["operators"]


def test_the_source_says_what_is_wrong_with_a_file_that_is_no_trace(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "op", "ts": "soon"}]}')
    end = _events_of(TraceSource(str(path)))[-1]
    assert isinstance(end, RunFinished) and end.outcome == "failed"
    assert str(path) in end.message and "\n" not in end.message


def test_a_cancelled_source_ends_cancelled_and_sends_no_rows(trace):
    source = TraceSource(str(trace), early_after_s=0.0)
    source.cancel()
    events = _events_of(source)
    assert not [event for event in events if isinstance(event, RowsReplaced)]
    assert isinstance(events[-1], RunFinished) and events[-1].outcome == "cancelled"


def test_only_a_big_trace_file_opens_in_the_app(trace, tmp_path, monkeypatch):
    monkeypatch.setattr(opening, "IN_APP_BYTES", 64 << 10)
    assert opens_in_app(str(trace))
    monkeypatch.setattr(opening, "IN_APP_BYTES", trace.stat().st_size + 1)
    assert not opens_in_app(str(trace)), "smaller: read before the app, as before"
    monkeypatch.setattr(opening, "IN_APP_BYTES", 1)
    report = tmp_path / "report.json"
    save_report(open_profile(trace)[0], report)
    assert not opens_in_app(str(report)), "a saved report opens from its ends"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": list(range(1000))}))
    assert not opens_in_app(str(other)), "no event array: refused before the app starts"
    assert not opens_in_app(str(tmp_path / "missing.json"))
    assert not opens_in_app(str(tmp_path))
    packed = tmp_path / "alexnet.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(trace.read_bytes()))
    monkeypatch.setattr(opening, "IN_APP_BYTES", trace.stat().st_size + 1)
    assert not opens_in_app(str(packed)), "it inflates to less than the size"
    monkeypatch.setattr(opening, "IN_APP_BYTES", trace.stat().st_size)
    assert opens_in_app(str(packed)), "a .gz by the size it inflates to, from its trailer"
    monkeypatch.setattr(opening, "IN_APP_BYTES", 1 << 40)
    monkeypatch.setattr(opening, "IN_APP_GZIP_BYTES", 1)
    assert opens_in_app(str(packed)), "or by its size on disk, whatever its trailer says"


def test_a_stop_while_grouping_ends_the_run_at_once_and_the_file_is_let_go(trace, monkeypatch):
    """Grouping a 1M-event trace is seconds in one call: quitting does not wait for it.
    The reading thread, left, stops at its next stage, before it keeps the file open."""
    from torchscan_tui.formats.kept_trace import KeptTrace
    from torchscan_tui.formats.trace import reader

    grouping, go_on = threading.Event(), threading.Event()
    original = reader.aggregate_events

    def slow_grouping(events, **options):
        grouping.set()
        go_on.wait(30)
        return original(events, **options)

    kept: list[KeptTrace] = []
    keep = KeptTrace.keep
    monkeypatch.setattr(reader, "aggregate_events", slow_grouping)
    monkeypatch.setattr(KeptTrace, "keep", lambda path: kept.append(keep(path)) or kept[-1])
    source = TraceSource(str(trace))
    events: list = []
    run = threading.Thread(target=source.run, args=(events.append,))
    run.start()
    try:
        assert grouping.wait(30)
        source.cancel()
        run.join(2)
        assert not run.is_alive(), "the run ends without waiting for the grouping"
        assert isinstance(events[-1], RunFinished) and events[-1].outcome == "cancelled"
    finally:
        go_on.set()
    for reading in threading.enumerate():
        if reading.name == "trace reading":
            reading.join(30)
    assert not [event for event in events if isinstance(event, RowsReplaced)]
    assert kept == [], "stopped at the stage after grouping: the file was never kept"


def test_a_stop_as_the_reading_ends_closes_the_file_it_kept(trace, monkeypatch):
    source = TraceSource(str(trace))
    original, opened = opening.open_profile_paged, []

    def stopped_as_it_ends(*args, **kwargs):
        opened.append(original(*args, **kwargs))
        source.cancel()  # after the whole is read, before the run shows it
        return opened[-1]

    monkeypatch.setattr(opening, "open_profile_paged", stopped_as_it_ends)
    events = _events_of(source)
    assert opened[0].trace is not None and not opened[0].trace.open
    assert isinstance(events[-1], RunFinished) and events[-1].outcome == "cancelled"
    assert not [event for event in events if isinstance(event, RowsReplaced)]
