"""A trace cut short (the job writing it killed, a copy interrupted): read what was written.

Chrome's trace format lets a trace's event array lack its end, for traces from processes
that died while writing them, and Perfetto opens such files. Here the bytes are cut after
one of the last complete events and closed, then decoded as any trace; the report made
from it is marked incomplete and says why (``trace_truncated``). Only the end is repaired: a
file damaged before its last events, or cut before its first event, is still refused.
"""

from __future__ import annotations

import re

from torchscan_tui.formats.jsonio import Progress, no_progress

EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# Between two events of the array: the one ends, a comma, the next begins.
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
# How far back from the end boundaries are looked for first (events are < 1 KiB each).
TAIL_WINDOW = 1 << 20
# The end looked at for a cut right after an event (and the white space after it).
TAIL_CHECK = 4096
# Cuts tried, from the last: the last event is usually the unfinished one.
TRIES = 4


def _cuts(data: bytes) -> list[int]:
    """Offsets just past an event's closing brace, last first (at most ``TRIES``)."""
    key = EVENTS_KEY.search(data)
    if key is None:
        return []
    ends = []
    tail = data[-TAIL_CHECK:].rstrip()  # not data.rstrip(): that would copy the file
    if tail.endswith(b","):
        tail = tail[:-1]
    if tail.endswith(b"}"):  # cut right after a whole event
        ends.append(len(data) - len(data[-TAIL_CHECK:]) + len(tail))
    start = max(key.end(), len(data) - TAIL_WINDOW)
    found = [match.start() + 1 for match in EVENT_BOUNDARY.finditer(data, start)]
    if not found and start > key.end():  # the last event is longer than the window
        found = [match.start() + 1 for match in EVENT_BOUNDARY.finditer(data, key.end())]
    ends.extend(reversed(found))
    return ends[:TRIES]


def decode_cut_trace(data: bytes, progress: Progress = no_progress) -> object | None:
    """The trace in ``data`` up to its last complete event, or None when no cut reads.

    ``data`` is a file that did not decode as JSON; what comes back is what
    :func:`~torchscan_tui.formats.trace.decode.decode_trace` gives for the repaired file.
    """
    from torchscan_tui.formats.trace.decode import DecodedTrace, decode_trace

    for end in _cuts(data):
        try:
            decoded = decode_trace(data[:end] + b"]}", progress)
        except ValueError:
            continue
        if isinstance(decoded, DecodedTrace) and decoded.events:
            return decoded
    return None
