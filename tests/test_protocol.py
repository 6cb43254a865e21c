"""The channel reader against a plain split-and-decode reference, over real pipes."""

from __future__ import annotations

import json
import os
import random
import threading

import pytest
from channel import line, read_dicts
from replay import make_row


def _messages(count: int, seed: int) -> list[dict]:
    picker = random.Random(seed)
    return [
        {
            "type": "rows",
            "rows": [make_row("x" * picker.randrange(0, 300), [[2, 3]], 1, 0.5)]
            * picker.randrange(1, 9),
        }
        for _ in range(count)
    ]


def _send_in_pieces(write_fd: int, data: bytes, seed: int) -> threading.Thread:
    """Write ``data`` in writes of random sizes, from 1 byte up, then close the pipe."""
    picker = random.Random(seed)

    def write() -> None:
        view = memoryview(data)
        while view:
            size = picker.choice([1, 7, 100, 4096, 70_000])
            os.write(write_fd, view[:size])
            view = view[size:]
        os.close(write_fd)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def _reference(data: bytes) -> list[dict]:
    """What the channel means: every complete, non-empty line that is a JSON object with a type."""
    found = []
    for text in data.split(b"\n")[:-1]:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        if isinstance(message, dict) and "type" in message:
            found.append(message)
    return found


@pytest.mark.parametrize("buffer_size", [1, 16, 333, 1 << 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_messages_across_reads_match_a_plain_split(buffer_size, seed):
    """A buffer smaller than a line grows; lines that straddle reads move to its front."""
    messages = _messages(60, seed)
    noise = [b"\n", b"not json\n", b"[1, 2]\n", b'{"no": "type"}\n']
    parts = []
    for index, message in enumerate(messages):
        parts.append(line(message))
        parts.append(noise[index % len(noise)])
    data = b"".join(parts) + b'{"type": "rows", "rows": [1'  # a partial last line
    read_fd, write_fd = os.pipe()
    writer = _send_in_pieces(write_fd, data, seed)
    received = read_dicts(read_fd, buffer_size=buffer_size)
    writer.join(timeout=30)
    os.close(read_fd)
    assert received == _reference(data) == messages
