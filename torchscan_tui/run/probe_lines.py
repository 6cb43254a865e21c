"""Kineto's own lines in the workload's output, said once (pure).

Each time the profiler starts or stops, Kineto writes a ``USDT:... profiler_start`` line
on the workload's stderr: the profiler this tool turned on, not the workload. A window of
steps or a torchrun job writes several. The first is passed on, named for what it is; the
rest are counted and said in one line when the run ends.
"""

from __future__ import annotations

import re

KINETO_PROBE = re.compile(r"^USDT:.*\]\s*profiler_(start|stop)\s*$")
FIRST_PROBE = "{line}   (Kineto's probe line for the profiler this tool started)"


class ProbeLines:
    """Counts Kineto's probe lines: :meth:`keep` says what to pass on of each line."""

    def __init__(self) -> None:
        self.count = 0

    def keep(self, line: str) -> str | None:
        """The line to pass on, or None for a probe line already said."""
        if not KINETO_PROBE.match(line):
            return line
        self.count += 1
        return FIRST_PROBE.format(line=line) if self.count == 1 else None

    def summary(self) -> str | None:
        """One line for the probe lines not shown, once the run is over; None if none."""
        if self.count < 2:
            return None
        return f"(Kineto wrote {self.count - 1} more profiler start/stop probe lines, folded)"
