"""The last lines of a stream, bounded, with a count of those dropped to stay so."""

from __future__ import annotations

from collections import deque


class LineTail:
    """At most ``limit`` lines, the newest; ``dropped`` counts the older ones let go."""

    def __init__(self, limit: int):
        self.limit = limit
        self.lines: deque[str] = deque(maxlen=limit)
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(self.lines) == self.limit:
            self.dropped += 1
        self.lines.append(line)

    def clear(self) -> None:
        self.lines.clear()
        self.dropped = 0
