"""Was a SIGKILL the out-of-memory killer? Ask the cgroup's OOM-kill counter (Linux).

The kernel counts OOM kills per memory cgroup: ``oom_kill`` in ``memory.events`` (cgroup
v2) or in ``memory.oom_control`` (cgroup v1). Reading it before and after a run tells a
plain ``kill -9`` from the OOM killer, which is what the user needs to hear.
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _candidates(pid: int | str, root: Path) -> list[Path]:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if controllers == "":  # cgroup v2
            found += [root / relative / "memory.events", root / "memory.events"]
        elif "memory" in controllers.split(","):
            found += [
                root / "memory" / relative / "memory.oom_control",
                root / "memory" / "memory.oom_control",
            ]
    return found


def oom_kill_count(pid: int | str = "self", root: Path = CGROUP_ROOT) -> int | None:
    """The OOM-kill count of ``pid``'s memory cgroup; None where it cannot be read."""
    for candidate in _candidates(pid, root):
        try:
            text = candidate.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def likely_oom(before: int | None, after: int | None) -> bool:
    return before is not None and after is not None and after > before
