"""A Chrome trace this process wrote or opened, held by its open descriptor (no torch).

``t`` exports a trace. It copies only a trace this process itself wrote (a live run's,
opened the moment the worker is done) or opened (the trace file the user named), from
the descriptor opened then: never whatever a name points at later, and never a path a
file gives (a report's ``trace_path`` is a hint to show, not a source: a report naming
``/etc/passwd`` or ``/dev/zero`` would otherwise be copied). Only a regular file is
kept, and at most the bytes it had when it was kept are copied (a file that grows, or a
device that never ends, cannot fill the disk); the copy checks between chunks whether it
was cancelled (quitting the app cancels it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from torchscan_tui.formats.atomic import ExportError, special_file_kind, write_atomically

COPY_CHUNK = 1 << 20


class ExportCancelled(ExportError):
    """The copy was cancelled (the app is quitting): the partial file is removed."""


class KeptTrace:
    """An open, regular trace file and its size when it was kept."""

    def __init__(self, fd: int, path: str, size: int):
        self._fd: int | None = fd
        self.path = path  # what to call it: the name it had when it was kept
        self.size = size

    @classmethod
    def keep(cls, path: str | os.PathLike, *, follow_links: bool = True) -> KeptTrace:
        """Open ``path`` and keep it: a regular file only (a FIFO is opened without
        blocking, to be refused). ``follow_links=False`` for a file in a folder others
        could write to. Raises ExportError naming the file."""
        name = os.fspath(path)
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        if not follow_links:
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(name, flags)
        except OSError as exc:
            raise ExportError(f"the trace {name} cannot be opened: {exc.strerror}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            kind = special_file_kind(info.st_mode) or "not a regular file"
            raise ExportError(f"the trace {name} is {kind}: only a regular file is exported")
        return cls(fd, name, info.st_size)

    @property
    def open(self) -> bool:
        return self._fd is not None

    @property
    def suffix(self) -> str:
        """``.json.gz`` for a compressed trace (copied as it is), else ``.json``."""
        return ".json.gz" if self.path.endswith(".gz") else ".json"

    def fileno(self) -> int:
        if self._fd is None:
            raise ValueError("the trace is closed")
        return self._fd

    def copy_to(
        self,
        destination: str | os.PathLike,
        *,
        overwrite: bool = False,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Path:
        """Copy the kept bytes to ``destination`` atomically, created 0600 (a trace holds
        host details and input shapes); ExportCancelled if ``cancelled()`` turns true."""
        fd = self._fd
        if fd is None:
            raise ExportError(f"the trace of this run is gone ({self.path}); run it again")

        def fill(out) -> None:
            offset = 0
            while offset < self.size:
                if cancelled():
                    raise ExportCancelled(f"the copy of {self.path} was cancelled")
                chunk = os.pread(fd, min(COPY_CHUNK, self.size - offset), offset)
                if not chunk:  # cut shorter since it was kept: what is left is copied
                    break
                out.write(chunk)
                offset += len(chunk)

        return write_atomically(destination, fill, overwrite=overwrite, mode=0o600)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
