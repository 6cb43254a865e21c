"""When a change reached the screen: timestamps of the frames a Textual screen paints.

``pilot.pause()`` waits for idle, so timing around it measures the harness as much as the
app (a cursor move reads ~90 ms that way). Instead, the screen's compositor refresh is
wrapped to note when each frame finished, and a change's latency is the time from the
key press to the first frame painted after the change was applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class FrameClock:
    """Notes the end time of every frame ``screen`` paints."""

    def __init__(self, screen) -> None:
        self.frames: list[float] = []
        paint = screen._compositor_refresh

        def timed_paint() -> None:
            paint()
            self.frames.append(time.perf_counter())

        screen._compositor_refresh = timed_paint

    def first_after(self, moment: float) -> float | None:
        return min((frame for frame in self.frames if frame >= moment), default=None)


def note_calls(owner: object, name: str) -> list[float]:
    """Wrap ``owner.name`` to note when each call returned (when a change was applied)."""
    moments: list[float] = []
    method: Callable = getattr(owner, name)

    def noted(*args, **kwargs):
        result = method(*args, **kwargs)
        moments.append(time.perf_counter())
        return result

    setattr(owner, name, noted)
    return moments
