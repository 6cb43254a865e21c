"""Watching real processes from tests: is a pid alive or reaped, its children, wait for
it to go, wait for a file."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def reaped(pid: int) -> bool:
    """Whether ``pid`` is gone and reaped: no such process, not even a zombie."""
    return not Path(f"/proc/{pid}").exists()


def children(pid: int) -> list[int]:
    """``pid``'s child processes (none once it is gone)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:  # the thread ended as it was read
            pass
    return found


def gone_within(pids, seconds: float) -> bool:
    """Whether every pid is gone within ``seconds`` (processes give no event to wait on)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def wait_for_file(path: Path, timeout: float = 60.0) -> str:
    """The contents of ``path`` once a workload has written a whole line to it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")
