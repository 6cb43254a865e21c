"""A run's private directory in the temporary folder, and the sweep of orphaned ones.

The app keeps each run's Chrome trace (for ``t``) in a directory of its own, removed when
the run is replaced or the app ends. A process killed outright (SIGKILL, the OOM killer)
cannot remove it, and a big profile's trace is hundreds of MiB. So each directory holds a
lock file, locked (``flock``) for as long as its owner lives: the kernel drops the lock
when the process dies, however it dies. Making a new directory first removes ours whose
lock nobody holds. A lock, not a PID in the name: PIDs are reused, and a container
sharing /tmp sees other PIDs than ours.

The worker stages what it writes beside a user's ``--trace`` path the same way, under
prefixes of its own (a window's trace pieces, an export being checked): a worker killed
in a big window would otherwise leave hundreds of MiB of pieces beside the user's file.
The next such directory made in that folder sweeps them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "torchscan-tui-"
LOCK_NAME = ".owner.lock"
NEWBORN_SECONDS = 10.0


class PrivateDir:
    """A directory only this process uses, locked while it exists."""

    def __init__(self, folder: str | os.PathLike | None = None, prefix: str = PREFIX):
        remove_orphans(folder, prefix)
        self.path = tempfile.mkdtemp(prefix=prefix, dir=folder)
        # Not inherited (Python's default): only this process holds the lock.
        self._lock_fd: int | None = os.open(
            os.path.join(self.path, LOCK_NAME), os.O_CREAT | os.O_RDWR, 0o600
        )
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)

    def remove(self) -> None:
        """Delete the directory and everything in it; again is harmless."""
        if self._lock_fd is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._lock_fd)
            self._lock_fd = None


def remove_orphans(folder: str | os.PathLike | None = None, prefix: str = PREFIX) -> list[str]:
    """Remove this user's private directories (named ``prefix``...) in ``folder`` whose
    owner is gone; return their paths.

    A directory without a lock file (written by an older version) is left alone: there
    is no telling whether its owner still runs.
    """
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob(prefix + "*"):
        lock = path / LOCK_NAME
        try:
            if path.is_symlink() or path.stat().st_uid != os.getuid():
                continue
            if time.time() - lock.stat().st_mtime < NEWBORN_SECONDS:
                continue  # its owner may be between creating the lock and taking it
            fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # not ours, not a directory of ours, or no lock file
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its owner is alive
            continue
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(path))
    return removed
