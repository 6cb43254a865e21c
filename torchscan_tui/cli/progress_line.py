"""One-line progress on stderr (no torch, no textual): a big profile opening, a run.

Opening a 100k-event trace takes about a second; the user sees ``opening trace.json:
parsing`` rewritten in place instead of a silent pause (:class:`ProgressLine`; nothing is
written unless stderr is a terminal, so pipes and logs stay clean). A headless run says
its phase, step and live RSS (:class:`RunProgress`): rewritten in place on a terminal
until the workload prints, one plain line each in a log, a step line there at most every
few seconds (a 100k-step warm-up once wrote 100k lines).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from torchscan_tui.cli.output import say

THROTTLE_S = 0.05
RSS_PROGRESS_INTERVAL_S = 0.5  # the live RSS, on a terminal, at most this often
LOG_STEP_INTERVAL_S = 5.0  # in a log: a step line at most this often, and the last
ERASE_LAST_LINE = "\x1b[1A\r\x1b[K"  # up one line, to its start, clear it


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


class RunProgress:
    """A headless run's progress line: what it does now, how long it has run."""

    def __init__(self, stream: TextIO | None = None, force: bool = False):
        self.stream = stream or sys.stderr
        self.in_place = force or self.stream.isatty()
        self.started = time.monotonic()
        self.last = ""  # what was said last
        self._on_screen = False  # whether it is still the terminal's last line
        self._rss_said = 0.0
        self._step_said = 0.0

    def say(self, what: str, extra: str = "") -> None:
        if self.in_place and self._on_screen:
            self.stream.write(ERASE_LAST_LINE)
        elapsed = time.monotonic() - self.started
        say(f"torchscan-tui: {what} ({elapsed:.1f} s{extra})", err=True)
        self.last, self._on_screen = what, True

    def workload_printed(self) -> None:
        """The workload wrote a line below ours: ours is no longer the one to rewrite."""
        self._on_screen = False

    def phase(self, what: str, step: int | None = None, steps: int | None = None) -> None:
        """A phase, or a step of it (``steps``: of how many; 0 or None: not known)."""
        if step is not None:
            now = time.monotonic()
            if not self.in_place and step != steps:
                if now - self._step_said < LOG_STEP_INTERVAL_S:
                    return
            self._step_said = now
            what += f": step {step}" + (f" of {steps}" if steps else "")
        if what != self.last:
            self.say(what)

    def rss(self, text: str) -> None:
        """The live RSS beside the phase, on a terminal only (a log gets no line per
        sample), and only while the phase line is the last line."""
        now = time.monotonic()
        if self.in_place and self._on_screen and now - self._rss_said >= RSS_PROGRESS_INTERVAL_S:
            self._rss_said = now
            self.say(self.last, f", RSS now {text} sampled")
