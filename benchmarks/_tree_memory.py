"""The memory a process and its children take together, sampled: their summed Pss.

``ru_maxrss`` is the kernel's high-water mark of one process. A trace's open makes its
summaries in a forked child beside the grouping (common/forked.py), whose pages are the
parent's until either writes them: the two processes' RSS would count the shared pages
twice, and either one's alone leaves the other out. Pss (proportional set size) counts a
shared page once, split between the processes sharing it, so the sum over the process
tree is the memory they take from the machine. Sampled, so a peak between two samples is
missed: the figure is a floor, read beside the kernel's mark of the main process.
"""

from __future__ import annotations

import threading
from pathlib import Path


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:  # gone, or not Linux
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (each thread's children listed by the kernel)."""
    found, waiting = [], [pid]
    while waiting:
        current = waiting.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                waiting.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                pass
    return found


def tree_pss_bytes(pid: int) -> int:
    """The summed Pss of ``pid`` and its descendants now, in bytes."""
    return sum(_pss_kib(member) for member in _tree(pid)) * 1024


class TreePeak:
    """Samples :func:`tree_pss_bytes` of a process every ``interval`` seconds on a thread
    until :meth:`stop`; ``peak`` is the largest sum seen, in bytes."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stopped.wait(self.interval):
            self.peak = max(self.peak, tree_pss_bytes(self.pid))

    def stop(self) -> int:
        self._stopped.set()
        self._thread.join()
        return self.peak
