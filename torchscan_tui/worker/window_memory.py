"""How much of a step window the worker's memory allows (issue 28, point 2).

An op-dense step (two LBFGS steps: 3.6M events) took the worker to 21.7 GiB on a 24 GiB
machine. What the profiler holds while it records is small next to what it takes to turn
the events into rows: Kineto's results built at ``stop()``, then ours. Measured here on
165k and 660k events (``benchmarks/window_memory.py``: 46 MB recorded, 749 MB at the
peak; 184 MB, 2.99 GB), the worker's peak grew 16.2-16.3 times what the process had
grown by while recording (about 4.5 KB an event): :data:`PEAK_PER_RECORDED`. So after
each profiled step the window knows what one more step would cost at its peak, and ends
before that passes the budget, keeping the steps it has (always at least one).

The budget: ``TORCHSCAN_WORKER_MEMORY`` (bytes, or with a K/M/G suffix), else half the
memory available when the window opens (``MemAvailable``).
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.records import Note
from torchscan_tui.common.formatting import format_bytes
from torchscan_tui.formats.report_schema import WindowMemoryFigures

BUDGET_VARIABLE = "TORCHSCAN_WORKER_MEMORY"
# The worker's peak growth over its growth while recording (see the module's docstring).
PEAK_PER_RECORDED = 16.0
# With sessions of a step or more (worker/step_sessions.py), measured the same way: a
# session's peak while it is read, over its own recording (torch's results for it), and
# what its events and allocations hold once read, over the same. At 1.19M events in three
# steps: 113 MB recorded a step, the worker's peak growth 1.90 GB, projected 2.49 GB.
# Steps of 34 MiB, three of them: 659 MiB here and 708 MiB in a clean-clone CI run, where
# 17x projected 686 and let that window pass a 700 MiB budget: 19x leaves a margin.
SESSION_PEAK_PER_RECORDED = 19.0
HELD_PER_RECORDED = 1.5
# A session is read and a fresh one started at the first step end past this much
# recording (~60k events, ~0.25 GB of torch's results): below it, the pause between two
# steps (torch stopped and started, its results freed, a trace piece written and merged
# later) costs more than it saves, and a script timing its own steps would see it.
SESSION_BYTES = 16 << 20
SHARE_OF_AVAILABLE = 0.5
_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def resident_bytes() -> int | None:
    """This process's resident set now (``/proc/self/statm``); None where unknown."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def available_bytes() -> int | None:
    """The kernel's estimate of memory available to start new work (``MemAvailable``)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def parse_budget(text: str) -> int | None:
    """``"512M"``, ``"2G"``, ``"1073741824"``: bytes; None for anything else."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = _SUFFIXES.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in _SUFFIXES else text
    try:
        value = float(number)
    except ValueError:
        return None
    return int(value * scale) if value > 0 else None


def memory_budget(environ: dict[str, str] | None = None) -> tuple[int | None, str]:
    """The budget in bytes (None: nothing bounds it) and where it comes from."""
    environ = dict(os.environ) if environ is None else environ
    given = environ.get(BUDGET_VARIABLE)
    if given:
        budget = parse_budget(given)
        if budget is not None:
            return budget, BUDGET_VARIABLE
    available = available_bytes()
    if available is None:
        return None, "no /proc/meminfo"
    return int(available * SHARE_OF_AVAILABLE), "half the memory available"


@dataclass
class WindowMemory:
    """The window's memory so far, step by step, against the budget."""

    budget: int | None
    budget_source: str
    read_resident: Callable[[], int | None] = resident_bytes
    baseline: int | None = None
    recorded: int = 0  # growth while recording, up to the last step
    cut_after: int | None = None  # the window was cut after this many steps
    # Sessions of a step or more, each read and let go before the next (step_sessions).
    per_step_sessions: bool = False
    held: int = 0  # growth once the last session was read: its events, as kept
    _recorded_before: int = 0  # the recording of the sessions read before
    steps_done: int = 0

    @classmethod
    def from_environment(cls) -> WindowMemory:
        budget, source = memory_budget()
        return cls(budget, source)

    def window_opens(self) -> None:
        self.baseline = self.read_resident()

    def step_done(self) -> None:
        """After a profiled step: what recording has grown the process by."""
        self.steps_done += 1
        now = self.read_resident()
        if self.baseline is not None and now is not None:
            self.recorded = self._recorded_before + max(now - self.baseline - self.held, 0)

    def session_full(self) -> bool:
        """Whether the session recording now has recorded enough to be read (a session
        per step: :data:`SESSION_BYTES`)."""
        return self.per_step_sessions and self.recorded - self._recorded_before >= SESSION_BYTES

    def session_taken(self) -> None:
        """A session was read and let go: what its events hold from now on."""
        now = self.read_resident()
        if self.baseline is not None and now is not None:
            self.held = max(now - self.baseline, 0)
            self._recorded_before = self.recorded

    def room_for_another(self, steps_done: int) -> bool:
        """After ``steps_done`` profiled steps (:meth:`step_done` called): would one more
        stay within the budget at the worker's peak?"""
        if self.budget is None or self.baseline is None or steps_done < 1:
            return True
        if self._peak_with(steps_done + 1, steps_done) <= self.budget:
            return True
        self.cut_after = steps_done
        return False

    def _peak_with(self, steps: int, steps_done: int) -> float:
        """The worker's growth at its peak for ``steps`` steps like those done so far:
        one session, all of them grouped at once; sessions of :data:`SESSION_BYTES` (or
        a step, where a step records more), the last read while the others' are held."""
        per_step = self.recorded / max(steps_done, 1)
        if not self.per_step_sessions:
            return steps * per_step * PEAK_PER_RECORDED
        # a session holds the steps it takes to record SESSION_BYTES: one, for big steps
        session = min(steps, max(1, math.ceil(SESSION_BYTES / max(per_step, 1)))) * per_step
        held = (steps * per_step - session) * HELD_PER_RECORDED
        return held + session * SESSION_PEAK_PER_RECORDED

    def room_for(self, more: float) -> bool:
        """Whether ``more`` bytes of recording would stay within the budget at the
        worker's peak (no budget, or no reading: yes)."""
        if self.budget is None or self.baseline is None:
            return True
        return (self.recorded + more) * PEAK_PER_RECORDED <= self.budget

    def projected_peak(self) -> int:
        """The worker's growth at its peak that the steps recorded so far predict."""
        return int(self._peak_with(self.steps_done, self.steps_done))

    def figures(self) -> WindowMemoryFigures:
        """What the report says of it; ``peak_rss``: the worker's peak so far (asked for
        once the rows are built, it is the grouping's)."""
        return {
            "budget": self.budget,
            "budget_source": self.budget_source,
            "recorded_bytes": self.recorded,
            "cut_after": self.cut_after,
            "window_start_rss": self.baseline,
            "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }

    def note(self, requested: int) -> Note | None:
        """Why the window holds fewer steps than asked, when memory cut it."""
        if self.cut_after is None or self.budget is None:
            return None
        kept = self.cut_after
        how = (
            f"reading a session takes about {SESSION_PEAK_PER_RECORDED:g}x its recording, "
            f"beside the sessions read before it"
            if self.per_step_sessions
            else f"grouping them takes about {PEAK_PER_RECORDED:g}x that"
        )
        return diag.make(
            "window_cut_for_memory",
            f"The window was cut to {kept} of {requested} step(s): the events of each step "
            f"took {format_bytes(self.recorded // kept)} while recording, and {how}, so one "
            f"more step would take the worker to about "
            f"{format_bytes(int(self._peak_with(kept + 1, kept)))}, past its memory budget "
            f"of {format_bytes(self.budget)} ({self.budget_source}). "
            f"The rows hold the {kept} step(s) kept. To keep more, set {BUDGET_VARIABLE} "
            "(e.g. 8G) on a machine that has it, or profile a smaller step.",
        )
