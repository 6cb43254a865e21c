"""The JSON helpers: the fast validity check always gives the stdlib's verdict."""

from __future__ import annotations

import json

import pytest

from torchscan_tui.formats import jsonio

DOCUMENTS = [
    b'{"traceEvents": [{"name": "aten::mm", "ts": 1.5}], "x": null}',
    b'{"a": [1, 2, 3,]}',  # trailing comma
    b'{"a": "\xff\xfe"}',  # not UTF-8: msgspec's skip would let it through
    b'{"a": "bad \\q escape"}',
    b'{"a": NaN, "b": Infinity}',  # the stdlib reads these; msgspec does not
    b'{"a": "\\ud800"}',  # a lone surrogate escape: likewise
    b'{"a": 1} trailing',
    b'{"a": "control \x01 character"}',
    b'{"name": "a"b"}',  # an unescaped quote, as old torch exports wrote
    b"[1, 2",
    b"",
]


def stdlib_verdict(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("data", DOCUMENTS)
def test_is_json_agrees_with_the_stdlib(data):
    assert jsonio.is_json(data) == stdlib_verdict(data)


def test_a_file_read_whole_or_in_chunks_is_the_same_bytes(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(bytes(range(256)) * 40_000)  # 10 MiB: three chunks of 4 MiB
    heard: list[float] = []
    whole = jsonio.read_bytes(str(path), lambda stage, done: heard.append(done))
    assert heard == [1.0]
    monkeypatch.setattr(jsonio, "WHOLE_READ_LIMIT", 0)  # as a file too big to read at once
    heard.clear()
    chunked = jsonio.read_bytes(str(path), lambda stage, done: heard.append(done))
    assert chunked == whole == path.read_bytes()
    assert len(heard) == 3 and heard == sorted(heard) and heard[-1] == 1.0
