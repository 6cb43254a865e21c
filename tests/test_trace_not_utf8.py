"""A trace with bytes that are not UTF-8 in its names (torch 2.13 writes some now and then:
its Python tracer's frames of its own threads, ``with_stack``) is read, each such byte
as U+FFFD, however it is read: whole, a piece at a time, in two halves, gzipped. It was
refused whole ("Invalid UTF-8 encoded string"), as the stdlib's JSON refuses it."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from torchscan_tui.common.forked import can_fork
from torchscan_tui.formats.jsonio import open_regular
from torchscan_tui.formats.opening import open_profile
from torchscan_tui.formats.report import ReportError, dumps_report, read_file
from torchscan_tui.formats.trace import stream
from torchscan_tui.formats.trace.decode import decode_trace
from torchscan_tui.formats.trace.halves import read_in_halves
from torchscan_tui.formats.trace.reader import report_from_trace

DATA = Path(__file__).parent / "data"
NAME = b'"name": "cudaLaunchKernel"'
NOT_UTF8 = b"\x8f"  # what torch wrote: a byte no UTF-8 text starts with
REPLACED = "\ufffd".encode()


def _traces(folder: Path) -> tuple[Path, Path]:
    """A real CUDA trace with every tenth ``cudaLaunchKernel`` (from the first, so both
    halves and many pieces hold one) named with a byte that is not UTF-8; and the same
    trace with U+FFFD written in its place, which is what it should read as."""
    data = gzip.decompress((DATA / "alexnet_cuda.json.gz").read_bytes())
    parts = data.split(NAME)
    assert len(parts) > 40

    def named(suffix: bytes) -> bytes:
        odd = NAME[:-1] + suffix + b'"'
        return parts[0] + b"".join(
            (odd if index % 10 == 0 else NAME) + part for index, part in enumerate(parts[1:])
        )

    (folder / "bad").mkdir()
    (folder / "good").mkdir()
    bad, good = folder / "bad" / "trace.json", folder / "good" / "trace.json"
    bad.write_bytes(named(NOT_UTF8))
    good.write_bytes(named(REPLACED))
    return bad, good


def _report(report: dict) -> str:
    return dumps_report({key: value for key, value in report.items() if key != "trace_path"})


def _replaced_rows(report: dict) -> list[dict]:
    return [row for row in report["operators"] if row["operator"] == "cudaLaunchKernel\ufffd"]


def test_the_stdlib_refuses_it_and_a_whole_read_takes_it_as_u_fffd(tmp_path):
    bad, good = _traces(tmp_path)
    with pytest.raises(UnicodeDecodeError):
        bad.read_bytes().decode("utf-8")
    whole = report_from_trace(decode_trace(read_file(str(bad))), str(bad))
    assert _replaced_rows(whole) and _replaced_rows(whole)[0]["calls"] >= 4
    assert _report(whole) == _report(report_from_trace(decode_trace(read_file(str(good))), "x"))


def test_read_a_piece_at_a_time_and_gzipped_it_is_the_same(tmp_path, monkeypatch, small_pieces):
    bad, good = _traces(tmp_path)
    pieces: list[int] = []
    original = stream.stream_trace
    monkeypatch.setattr(
        stream,
        "stream_trace",
        lambda chunks, consume: original(chunks, lambda b: (pieces.append(1), consume(b))),
    )
    expected = _report(open_profile(good)[0])
    pieces.clear()
    assert _report(open_profile(bad)[0]) == expected
    assert len(pieces) > 10, "read in pieces, not whole as a fallback"
    zipped = tmp_path / "bad" / "trace.json.gz"
    zipped.write_bytes(gzip.compress(bad.read_bytes()))
    assert _report(open_profile(zipped)[0]) == expected


@pytest.mark.skipif(not can_fork(), reason="a second process: Linux, two cores")
def test_read_in_two_halves_it_is_the_same(tmp_path, split_any_size):
    bad, good = _traces(tmp_path)
    with open_regular(str(bad)) as raw:
        split = read_in_halves(raw.fileno(), str(bad))
    assert split is not None and split.second_half_pid != os.getpid()
    assert _report(open_profile(bad)[0]) == _report(open_profile(good)[0])
    zipped = tmp_path / "trace.json.gz"
    zipped.write_bytes(gzip.compress(bad.read_bytes()))
    with open_regular(str(zipped)) as raw:
        split = read_in_halves(raw.fileno(), str(zipped))
    assert split is not None and split.second_half_pid != os.getpid()
    assert _report(open_profile(zipped)[0]) == _report(open_profile(good)[0])


def test_a_binary_file_is_still_refused_in_one_line(tmp_path):
    """The repair is for a decode that failed on UTF-8 alone: a file that is no JSON
    (its first byte is none) is refused as before, never copied to be read again."""
    binary = tmp_path / "weights.json"
    binary.write_bytes(NOT_UTF8 + bytes(range(256)) * 64)
    with pytest.raises(ReportError, match="is not valid JSON"):
        open_profile(binary)
