"""Atomic file writes that never clobber by accident (no torch, no textual).

Every file this tool writes (reports, row exports, traces) goes through here: a temporary
file in the destination directory, fsync, then ``os.replace``, so a crash or a full disk
leaves either the old file or the new one, never half of one. Errors are re-raised as
:class:`ExportError` with a one-line message naming the user's path, not the temp name.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


class ExportError(Exception):
    """A write the user asked for could not be done; the message names their path."""


class DestinationExists(ExportError):
    """The destination exists and the caller did not ask to overwrite it."""


def check_destination(path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Validate a destination before any work is done; return it as a Path.

    A symlink at the destination is replaced by the new file (the link's target is left
    untouched), and counts as an existing file for the overwrite confirmation.
    """
    destination = Path(os.fspath(path)).expanduser()
    try:
        return _checked(destination, overwrite)
    except OSError as error:  # a too-long name, a loop of links, ...
        raise ExportError(describe_os_error(error, destination)) from error


def _checked(destination: Path, overwrite: bool) -> Path:
    if destination.is_dir():
        raise ExportError(f"{destination} is a directory: give a file name inside it")
    kind = _special_kind(destination)
    if kind:  # replacing it with a regular file would break whatever uses it
        raise ExportError(f"{destination} is {kind}, not a regular file: pick a file path")
    parent = destination.parent
    if not parent.exists():
        raise ExportError(f"{parent} does not exist: create it first or pick another place")
    if not parent.is_dir():
        raise ExportError(f"{parent} is not a directory: pick another place for {destination.name}")
    if (destination.exists() or destination.is_symlink()) and not overwrite:
        raise DestinationExists(f"{destination} already exists: confirm to overwrite it")
    return destination


_SPECIAL_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def special_file_kind(mode: int) -> str | None:
    """``a FIFO``, ``a character device``, ... for a file mode of that kind, else None.
    Writes (here) and reads (``jsonio``) both refuse such files, naming the kind."""
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def _special_kind(destination: Path) -> str | None:
    """What ``destination`` (or the file a link there points to) is, if not a regular file."""
    try:
        mode = os.stat(destination).st_mode
    except FileNotFoundError:  # nothing there, or a link to nothing: a file may be made
        return None
    return special_file_kind(mode)


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask: from /proc on Linux (changing it, even briefly, would race
    with other threads creating files), else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _existing_mode(destination: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(destination).st_mode)
    except OSError:
        return None


def describe_os_error(error: OSError, destination: Path) -> str:
    reasons = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "the file system is read-only",
        errno.ENAMETOOLONG: "the file name is too long",
    }
    reason = reasons.get(error.errno or 0, error.strerror or str(error))
    return f"could not write {destination}: {reason}"


def write_atomically(
    path: str | os.PathLike,
    fill: Callable[[BinaryIO], None],
    *,
    overwrite: bool = False,
    mode: int = 0o644,
) -> Path:
    """Create ``path`` atomically with what ``fill`` writes into an open binary file.

    The temp file is created with ``mode`` from the start (a trace is never readable by
    others, even briefly), fsynced, then renamed over the destination. As ``open`` would,
    the umask applies; a file replaced keeps no more permission than it had (``--force``
    over a 0600 file writes 0600). On any OSError the temp file is removed and ExportError
    names ``path``.
    """
    destination = check_destination(path, overwrite=overwrite)
    mode &= ~current_umask()
    existing = _existing_mode(destination)
    if existing is not None:
        mode &= existing
    temp_name = None
    try:
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{destination.name[:40]}.", suffix=".tmp", dir=destination.parent
        )
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "wb") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if not overwrite and (destination.exists() or destination.is_symlink()):
            raise DestinationExists(f"{destination} already exists: confirm to overwrite it")
        os.replace(temp_name, destination)
        temp_name = None
    except OSError as error:
        raise ExportError(describe_os_error(error, destination)) from error
    finally:
        if temp_name is not None:
            try:
                os.unlink(temp_name)
            except OSError:
                pass
    return destination


def write_bytes_atomically(
    path: str | os.PathLike, data: bytes, *, overwrite: bool = False, mode: int = 0o644
) -> Path:
    """Write ``data`` to ``path`` atomically; raise ExportError naming ``path`` on failure."""

    def fill(handle: BinaryIO) -> None:
        handle.write(data)

    return write_atomically(path, fill, overwrite=overwrite, mode=mode)


def write_text_atomically(
    path: str | os.PathLike, text: str, *, overwrite: bool = False, mode: int = 0o644
) -> Path:
    return write_bytes_atomically(path, text.encode("utf-8"), overwrite=overwrite, mode=mode)
