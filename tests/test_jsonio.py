"""The JSON helpers: the fast validity check always gives the stdlib's verdict."""

from __future__ import annotations

import json

import pytest

from torchscan_tui import jsonio

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


@pytest.mark.parametrize("codec", ["msgspec", "stdlib"])
@pytest.mark.parametrize("data", DOCUMENTS)
def test_is_json_agrees_with_the_stdlib(data, codec, monkeypatch):
    if codec == "stdlib":
        monkeypatch.setattr(jsonio, "msgspec", None)
    assert jsonio.is_json(data) == stdlib_verdict(data)
