"""A big trace file's halves read in two processes at once (formats/trace/halves.py) give
the columns and the report one reader gives, and whatever fails falls back to one reader
(issue 31, point 1).

The real traces here are small: the size a file is split from is lowered to nothing, so
each is split at its middle (or where a test puts the cut) and the second half really is
read in a forked child (its pid is checked: a silent fallback cannot pass)."""

from __future__ import annotations

import gzip
import json
import os
import pickle
from dataclasses import asdict, fields
from pathlib import Path

import pytest
from proc_helpers import children
from stacked_trace import write_stacked_memory_trace

from torchscan_tui.common.forked import can_fork
from torchscan_tui.formats.jsonio import file_chunks, open_regular
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import ReportError, dumps_report
from torchscan_tui.formats.trace import halves, stream
from torchscan_tui.formats.trace.columns import ColumnReader, TraceColumns
from torchscan_tui.formats.trace.halves import SplitRead, read_in_halves

DATA = Path(__file__).parent / "data"
PARENT = os.getpid()
needs_fork = pytest.mark.skipif(not can_fork(), reason="a second process: Linux, two cores")
REAL_TRACES = [
    pytest.param(  # call stacks, [memory] instants and their args, 2021 fields
        "resnet50_2021_cuda.pt.trace.json.gz", marks=pytest.mark.slow
    ),
    "alexnet_cuda.json.gz",  # kernels, device waits
    "mtia_inference.json.gz",
    "rocm_minitoy.json.gz",
    "cpu_trace.json",
    "backward_thread.json",
]


def _plain(name: str, folder: Path) -> Path:
    """A test trace as a plain .json file."""
    source = DATA / name
    path = folder / name.removesuffix(".gz")
    path.write_bytes(
        gzip.decompress(source.read_bytes()) if name.endswith(".gz") else source.read_bytes()
    )
    return path


def _gzipped(name: str, folder: Path) -> Path:
    """A test trace as a .json.gz file."""
    path = folder / (name.removesuffix(".gz") + ".gz")
    path.write_bytes(gzip.compress(_plain(name, folder).read_bytes()))
    return path


def _read_in_halves(path: Path) -> SplitRead | None:
    """The file read in halves from one open of it, as opening does."""
    with open_regular(str(path)) as raw:
        return read_in_halves(raw.fileno(), str(path))


def _one_reader(path: Path) -> tuple[object, TraceColumns]:
    reader = ColumnReader(str(path))
    header = stream.stream_trace(file_chunks(str(path)), reader.add)
    return header, reader.finish()


def _same_columns(one: TraceColumns, two: TraceColumns) -> None:
    assert one.has_shapes == two.has_shapes
    assert one.memory_args == two.memory_args
    for field in fields(one.columns):
        first, second = getattr(one.columns, field.name), getattr(two.columns, field.name)
        if field.name == "python_frames":
            first, second = first and asdict(first), second and asdict(second)
        elif hasattr(first, "__len__") and not isinstance(first, dict | str):
            first, second = list(first), list(second)
        assert first == second, field.name


@needs_fork
@pytest.mark.parametrize("name", REAL_TRACES)
def test_a_real_trace_read_in_two_halves_gives_one_readers_columns_and_report(
    name, tmp_path, split_any_size
):
    path = _plain(name, tmp_path)
    split = _read_in_halves(path)
    assert split is not None
    header, columns, reader_of_tail = split
    assert reader_of_tail != PARENT, "the second half was read in a child"
    assert children(PARENT) == [], "and the child is gone"
    one_header, one = _one_reader(path)
    assert header == one_header
    _same_columns(one, columns)
    assert dumps_report(open_profile(path)[0]) == dumps_report(open_profile(path, fork=False)[0])


@needs_fork
@pytest.mark.slow  # a torch profile written first: seconds
def test_a_with_stack_memory_trace_read_in_two_halves_gives_one_readers_report(
    tmp_path, split_any_size
):
    """torch 2.x's python_function frames (joined across the cut, the call sites made
    from them after), nn.Module events and [memory] instants."""
    path = write_stacked_memory_trace(tmp_path / "stacked.json")
    split = _read_in_halves(path)
    assert split is not None and split.second_half_pid != PARENT
    assert split.columns.columns.python_frames is not None
    _same_columns(_one_reader(path)[1], split.columns)
    report = open_profile(path)[0]
    assert report["context"]["call_sites"] and report["memory"] and report["modules"]
    assert dumps_report(report) == dumps_report(open_profile(path, fork=False)[0])


@needs_fork
@pytest.mark.parametrize("share", [0.02, 0.2, 0.5, 0.8, 0.98])
def test_wherever_the_cut_falls_the_columns_are_one_readers(
    share, tmp_path, monkeypatch, split_any_size
):
    """Call stacks only after the cut or only before it, the events looked at for Input
    Dims on both sides of it, memory instants on either: joined as one reader reads them."""
    events = [_op(f"op{i % 37}", 10 * i, 5, shapes=i >= 150) for i in range(400)]
    for i in range(0, 400, 3):
        events[i]["args"]["Call stack"] = f"model.py(4{i % 5}): forward"
    events += [_memory(10 * i + 1, 64) for i in range(400)]
    events.sort(key=lambda event: event["ts"])
    path = tmp_path / "mixed.json"
    path.write_bytes(_trace(events))
    monkeypatch.setattr(halves, "HEAD_SHARE", share)
    monkeypatch.setattr("torchscan_tui.formats.trace.columns.SHAPE_PROBE", 300)
    split = _read_in_halves(path)
    assert split is not None and split.second_half_pid != PARENT
    _same_columns(_one_reader(path)[1], split.columns)


@needs_fork
def test_shapes_first_seen_past_the_probe_are_not_seen_across_the_cut(
    tmp_path, monkeypatch, split_any_size
):
    """One reader looks for Input Dims in the first events only: a cut inside them must
    not let the second half's shaped events count."""
    events = [_op(f"op{i}", 10 * i, 5, shapes=i >= 350) for i in range(400)]
    path = tmp_path / "late_shapes.json"
    path.write_bytes(_trace(events))
    monkeypatch.setattr("torchscan_tui.formats.trace.columns.SHAPE_PROBE", 300)
    for share in (0.1, 0.5, 0.9):
        monkeypatch.setattr(halves, "HEAD_SHARE", share)
        split = _read_in_halves(path)
        assert split is not None and split.second_half_pid != PARENT
        assert split.columns.has_shapes is False
    monkeypatch.setattr("torchscan_tui.formats.trace.columns.SHAPE_PROBE", 360)
    split = _read_in_halves(path)
    assert split is not None and split.columns.has_shapes is True


@needs_fork
def test_a_cut_inside_a_string_is_not_taken_and_the_file_is_read_by_one_reader(
    tmp_path, monkeypatch, split_any_size
):
    """A ``}, {`` inside a name just past the middle looks like a cut; the text up to it
    is not whole events, so no split is made, and opening gives one reader's report."""
    events = [_op(f"op{i}", 10 * i, 5) for i in range(40)]
    events[20]["name"] = "a" * 20_000 + "}, {" + "b" * 20_000
    path = tmp_path / "braces.json"
    path.write_bytes(_trace(events))
    text = path.read_bytes()
    monkeypatch.setattr(halves, "HEAD_SHARE", 0.45)
    middle = int(len(text) * 0.45)
    assert text.index(b"a" * 100) < middle < text.index(b"}, {", middle) < text.index(b"b" * 100)
    assert _read_in_halves(path) is None
    assert children(PARENT) == []
    assert dumps_report(open_profile(path)[0]) == dumps_report(open_profile(path, fork=False)[0])


@needs_fork
def test_a_trace_whose_name_is_replaced_as_it_opens_is_read_as_first_opened(
    tmp_path, monkeypatch, split_any_size
):
    """Both halves read the file the stream opened (its descriptor, at offsets), never
    what the name holds after: a file put in its place once it is open is not read."""
    path = _plain("alexnet_cuda.json.gz", tmp_path)
    expected = dumps_report(open_profile(path, fork=False)[0])
    other = _plain("cpu_trace.json", tmp_path)
    real_open, opened, splits = os.open, [], []

    def replaced_once_open(name, *args, **kwargs):
        descriptor = real_open(name, *args, **kwargs)
        if str(name) == str(path):
            opened.append(name)
            if len(opened) == 1:
                os.replace(other, path)
        return descriptor

    def noted(*args, **kwargs):
        split = read_in_halves(*args, **kwargs)
        splits.append(split is not None and split.second_half_pid != PARENT)
        return split

    monkeypatch.setattr(os, "open", replaced_once_open)
    monkeypatch.setattr(halves, "read_in_halves", noted)
    report = open_profile(path)[0]
    assert splits == [True], "read in two halves"
    assert opened == [str(path)], "opened once"
    assert dumps_report(report) == expected


@needs_fork
@pytest.mark.parametrize("written", [_plain, _gzipped], ids=["plain", "gz"])
def test_a_child_that_dies_has_this_process_read_the_second_half(
    written, tmp_path, monkeypatch, split_any_size
):
    path = written("alexnet_cuda.json.gz", tmp_path)
    read_tail = halves.read_tail

    def dies_in_a_child(*args):
        if os.getpid() != PARENT:
            os._exit(3)
        return read_tail(*args)

    monkeypatch.setattr(halves, "read_tail", dies_in_a_child)
    split = _read_in_halves(path)
    assert split is not None and split.second_half_pid == PARENT, "read here after the child died"
    _same_columns(_one_reader(path)[1], split.columns)
    assert children(PARENT) == []


@needs_fork
def test_a_damaged_event_in_the_second_half_is_refused_as_one_reader_refuses_it(
    tmp_path, split_any_size
):
    events = [_op(f"op{i}", 10 * i, 5) for i in range(400)]
    events[300]["ts"] = "soon"
    path = tmp_path / "damaged.json"
    path.write_bytes(_trace(events))
    with pytest.raises(ReportError) as split:
        open_profile(path)
    with pytest.raises(ReportError) as one:
        open_profile(path, fork=False)
    assert str(split.value) == str(one.value)
    assert "not a number" in str(split.value)
    assert children(PARENT) == []


@needs_fork
def test_a_file_cut_short_in_its_second_half_opens_up_to_the_cut(tmp_path, split_any_size):
    events = [_op(f"op{i}", 10 * i, 5) for i in range(400)]
    text = _trace(events)
    path = tmp_path / "cut.json"
    path.write_bytes(text[: len(text) * 9 // 10])
    split, one = open_profile(path)[0], open_profile(path, fork=False)[0]
    assert split["run"]["complete"] is False
    assert dumps_report(split) == dumps_report(one)


@needs_fork
def test_the_object_limit_counts_both_halves(tmp_path, monkeypatch, split_any_size):
    """Each half under the limit, the file over it: refused as one reader refuses it."""
    events = [_op(f"op{i}", 10 * i, 5) for i in range(400)]
    path = tmp_path / "many.json"
    path.write_bytes(_trace(events))
    objects = path.read_bytes().count(b"{")
    monkeypatch.setattr(stream, "max_objects", lambda: objects * 3 // 4)
    with pytest.raises(stream.NotStreamable):
        _read_in_halves(path)
    monkeypatch.setattr(stream, "max_objects", lambda: objects)
    assert _read_in_halves(path) is not None


def test_small_or_single_core_files_are_not_split(tmp_path, monkeypatch):
    path = _plain("cpu_trace.json", tmp_path)
    assert _read_in_halves(path) is None  # far under the size
    assert _read_in_halves(DATA / "alexnet_cuda.json.gz") is None  # inflates far under it
    monkeypatch.setattr(halves, "SPLIT_FROM_BYTES", 0)
    monkeypatch.setattr(halves, "can_fork", lambda: False)
    assert _read_in_halves(path) is None
    assert _read_in_halves(DATA / "alexnet_cuda.json.gz") is None


@needs_fork
@pytest.mark.parametrize("name", REAL_TRACES)
def test_a_real_gz_trace_read_in_two_halves_gives_one_readers_columns_and_report(
    name, tmp_path, split_any_size
):
    """What ``tensorboard_trace_handler(use_gzip=True)`` writes: both processes inflate
    it from its start and cut it at the same event, found in the inflated text."""
    path = _gzipped(name, tmp_path)
    split = _read_in_halves(path)
    assert split is not None
    assert split.second_half_pid != PARENT, "the second half was read in a child"
    assert children(PARENT) == [], "and the child is gone"
    one_header, one = _one_reader(path)
    assert split.header == one_header
    _same_columns(one, split.columns)
    assert dumps_report(open_profile(path)[0]) == dumps_report(open_profile(path, fork=False)[0])


@needs_fork
@pytest.mark.parametrize("share", [0.02, 0.5, 0.98])
def test_wherever_a_gz_traces_cut_falls_the_columns_are_one_readers(
    share, tmp_path, monkeypatch, split_any_size
):
    events = [_op(f"op{i % 37}", 10 * i, 5) for i in range(2000)]
    events += [_memory(10 * i + 1, 64) for i in range(0, 2000, 7)]
    path = tmp_path / "mixed.json.gz"
    path.write_bytes(gzip.compress(_trace(events)))
    monkeypatch.setattr(halves, "HEAD_SHARE", share)
    split = _read_in_halves(path)
    assert split is not None and split.second_half_pid != PARENT
    _same_columns(_one_reader(path)[1], split.columns)


@needs_fork
def test_a_gz_whose_trailer_misleads_is_still_read_as_one_reader_reads_it(tmp_path, split_any_size):
    """Two gzip members (the trailer gives the last one's size only), and a file cut
    short (its last bytes are no trailer): the cut moves or is not made; what is read
    is what one reader reads."""
    text = _trace([_op(f"op{i % 37}", 10 * i, 5) for i in range(3000)])
    members = tmp_path / "members.json.gz"
    members.write_bytes(gzip.compress(text[:1000]) + gzip.compress(text[1000:]))
    split = _read_in_halves(members)
    assert split is not None and split.second_half_pid != PARENT
    _same_columns(_one_reader(members)[1], split.columns)
    whole = gzip.compress(text)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) * 9 // 10])
    split_report, one = open_profile(cut)[0], open_profile(cut, fork=False)[0]
    assert split_report["run"]["complete"] is False
    assert dumps_report(split_report) == dumps_report(one)
    assert children(PARENT) == []


@needs_fork
def test_a_gz_said_to_inflate_past_the_limit_is_not_split(tmp_path, monkeypatch, split_any_size):
    """Its trailer's size over the inflation limit: one reader reads it, and refuses it
    with its own message, instead of two processes inflating a bomb."""
    path = _gzipped("cpu_trace.json", tmp_path)
    monkeypatch.setenv("TORCHSCAN_MAX_DECOMPRESSED", "1000")
    assert _read_in_halves(path) is None
    with pytest.raises(ReportError, match="inflates past"):
        open_profile(path)


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_both_processes_find_the_same_cut_in_the_inflated_text_however_it_comes(piece, monkeypatch):
    """A ``.gz``'s cut is found in the inflated text as it comes, in pieces whose sizes
    zlib decides: the head up to the cut, the ``, `` between, and the tail from it are
    the text, wherever the middle falls (in a piece, at its edge, past the window)."""
    monkeypatch.setattr(halves, "MIDDLE_WINDOW", 1000)  # a few events: pieces cross it
    text = _trace([_op(f"op{i}", 10 * i, 5) for i in range(40)])
    for middle in (0, 1, 500, len(text) // 2, len(text) - 200):
        pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
        head = b"".join(halves._head_to_cut(iter(pieces), middle))
        tail = b"".join(halves._tail_from_cut(iter(pieces), middle))
        assert head.endswith(b"}") and tail.startswith(b"{")
        assert len(head) >= middle - 1 and head.startswith(text[:middle])
        between = text[len(head) : len(text) - len(tail)]
        assert head + between + tail == text and between.strip() == b","
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    with pytest.raises(stream.NotAnEventEnd):  # a middle past the text: no cut
        b"".join(halves._head_to_cut(iter(pieces), len(text) + 10))
    with pytest.raises(stream.NotStreamable):
        b"".join(halves._tail_from_cut(iter(pieces), len(text) + 10))


def test_a_reader_sent_through_pickle_extends_another_as_one_reader_reads_on():
    """The join itself, without a file: batches read by two readers, the second pickled
    (caches left behind) and taken in, as one reader reading all the batches."""
    events = [_op(f"op{i % 11}", 10 * i, 5, shapes=i % 2 == 0) for i in range(60)]
    for i in range(30, 60, 4):
        events[i]["args"]["Call stack"] = "train.py(7): step"
    batches = [_decoded(events[i : i + 10]) for i in range(0, 60, 10)]
    whole = ColumnReader()
    first, second = ColumnReader(), ColumnReader()
    for index, batch in enumerate(batches):
        whole.add(batch)
        (first if index < 3 else second).add(batch)
    later = pickle.loads(pickle.dumps(second))
    first.extend(later)
    joined, one = first.finish(), whole.finish()
    _same_columns(one, joined)
    assert joined.columns.names[-1] is one.columns.names[-1], "interned again"


def _decoded(events: list) -> list:
    from torchscan_tui.formats.trace.decode import EventDecoder

    return EventDecoder().decode(json.dumps(events).encode())


def _trace(events: list) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1).encode()


def _op(name: str, ts: int, dur: int, shapes: bool = True) -> dict:
    args = {"Input Dims": [[2, 2]]} if shapes else {}
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": args}  # fmt: skip


def _memory(ts: int, size: int) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
            "ts": ts, "s": "t", "args": {"Addr": 1000 + ts, "Bytes": size, "Device Type": 0,
            "Total Allocated": size}}  # fmt: skip
