"""What the peak pass said of its steps (``worker/peak_pass.py``), read back (pure).

Each line is ``K SECONDS`` (step K ended that long after the pass started), the last one
``stopped K`` when ``--rss-steps`` ended it there; one ``import torch STARTED SECONDS``
says when the script imported torch and how long that took. From them: how far the pass got, its
clean (unprofiled) step times, and about how long the script took before its first step
(imports, model, first batch): the first step's end less a typical step.
"""

from __future__ import annotations

import statistics
from typing import NamedTuple


class PeakSteps(NamedTuple):
    steps: int  # outermost optimizer steps the pass completed
    stopped_at: int | None  # --rss-steps ended it at this step
    step_seconds: list[float]  # each step after the first, as the pass ran it unprofiled
    first_step_end: float | None  # seconds from the pass's start to its first step's end
    torch_import_seconds: float | None = None  # the script's ``import torch``

    @property
    def startup_seconds(self) -> float | None:
        """About how long the script ran before its first step began: the first step's
        end less the median step (None without two steps to tell them apart)."""
        if self.first_step_end is None or not self.step_seconds:
            return None
        return max(self.first_step_end - statistics.median(self.step_seconds), 0.0)


def read_peak_steps(text: str) -> PeakSteps:
    """The steps said in ``text`` (a partial last line, or a line the workload forged,
    is left out: only well-formed lines count)."""
    ends: list[float] = []
    stopped_at = None
    torch_import = None
    whole = text.split("\n")[:-1]  # a line still being written has no newline yet
    for line in whole:
        parts = line.split()
        if parts[:2] == ["import", "torch"] and len(parts) == 4 and torch_import is None:
            try:
                torch_import = max(float(parts[3]), 0.0)
            except ValueError:
                pass
            continue
        if len(parts) != 2:
            continue
        if parts[0] == "stopped" and parts[1].isdigit():
            stopped_at = int(parts[1])
            continue
        if not parts[0].isdigit() or int(parts[0]) != len(ends) + 1:
            continue  # not the next step: not ours
        try:
            ends.append(float(parts[1]))
        except ValueError:
            continue
    seconds = [later - earlier for earlier, later in zip(ends, ends[1:], strict=False)]
    return PeakSteps(len(ends), stopped_at, seconds, ends[0] if ends else None, torch_import)
