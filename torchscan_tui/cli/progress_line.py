"""A one-line progress report on stderr while a big profile opens (no torch, no textual).

Opening a 100k-event trace takes about a second; the user sees ``opening trace.json:
parsing`` rewritten in place instead of a silent pause. Nothing is written unless stderr
is a terminal, so pipes and logs stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

THROTTLE_S = 0.05


class ProgressLine:
    """A ``progress(stage, fraction)`` callback that rewrites one line of a terminal."""

    def __init__(self, name: str, stream: TextIO | None = None, force: bool = False):
        self.name = name
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self._last = 0.0
        self._width = 0

    def __call__(self, stage: str, fraction: float) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < THROTTLE_S and 0.0 < fraction < 1.0):
            return
        self._last = now
        text = f"torchscan-tui: opening {self.name}: {stage} {fraction:4.0%}"
        self._write("\r" + text.ljust(self._width))
        self._width = len(text)

    def clear(self) -> None:
        """Erase the line (before the app takes the screen or an error is printed)."""
        if self.enabled and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.clear()
