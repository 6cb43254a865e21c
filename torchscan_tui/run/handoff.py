"""Files the session makes for a child to write and reads back through its own
descriptor (no torch): the session side of ``run/rank_files.py``.

A file the workload can reach by name (it runs in the same user's processes as the
ranks) is never opened by that name again: a FIFO put there would hang the reader, a
link to ``/dev/zero`` would be read until memory runs out, a deleted folder would lose
it. The session creates each file (``O_EXCL``, 0600, in its private folder) and keeps the
descriptor; what is read is always that file, and never more than asked for.
"""

from __future__ import annotations

import os

from torchscan_tui.run.rank_files import handoff_variable


class HandoffFile:
    """One file made for a child: its name in the environment, its kept descriptor."""

    def __init__(self, folder: str, name: str):
        self.name = name
        self.path = os.path.join(folder, name)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd: int | None = os.open(self.path, flags, 0o600)
        info = os.fstat(self._fd)
        self.variable = handoff_variable(name)
        self.spec = f"{self.path}:{info.st_dev}:{info.st_ino}"
        self._offset = 0

    def read_new(self, limit: int) -> bytes:
        """What the child wrote since the last call, at most ``limit`` bytes."""
        if self._fd is None:
            return b""
        data = os.pread(self._fd, limit, self._offset)
        self._offset += len(data)
        return data

    def read_all(self, limit: int) -> bytes:
        """The file's first ``limit`` bytes (a small file read whole)."""
        return os.pread(self._fd, limit, 0) if self._fd is not None else b""

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def handoff_env(files: list[HandoffFile], base: dict[str, str]) -> dict[str, str]:
    """``base`` with each file named for its child (see ``rank_files.open_handoff``)."""
    return {**base, **{handoff.variable: handoff.spec for handoff in files}}
