"""The files a run's children write for the session, child side (no imports but os: the
peak pass's ranks load this before the script runs, and must not weigh more).

torchrun starts the ranks, so no pipe of ours reaches them, and the workload runs inside
each rank and can reach the run's private folder. So the session creates every file a
rank will write before the job starts (``run/handoff.py``): one channel per local rank
(``local-L.channel``, the profile pass) and one peak file per local rank
(``local-L.rss``, the peak pass), and names each in the environment with its device and
inode. A rank opens its file by that name without creating anything or following a
link, and writes only if it is that very file; the session reads each back through the
descriptor it kept from creation, never by name. Files go by ``LOCAL_RANK``: a c10d
rendezvous hands out global ranks in order of arrival, so across nodes a process's
global rank may differ between the two passes, while its place on its node does not.
"""

from __future__ import annotations

import os

from torchscan_tui.common.file_reads import read_span

HANDOFF_VARIABLE = "TORCHSCAN_HANDOFF_"  # + the file's name: "PATH:DEV:INO"
PEAK_STEPS = "peak.steps"  # a plain peak pass's steps: "K SECONDS" lines (worker/peak_pass.py)


REMOTE_CHANNEL = "remote.channel"  # other nodes' ranks' channels, as rank 0 collected them
REMOTE_PEAKS = "remote.rss"  # other nodes' ranks' peaks: "NODE LOCAL_RANK PEAK" lines
NODE_VARIABLE = "TORCHSCAN_NODE"  # the session's name for its node, the same in both passes


def channel_name(local_rank: int) -> str:
    return f"local-{local_rank}.channel"


def rss_name(local_rank: int) -> str:
    return f"local-{local_rank}.rss"


def handoff_variable(name: str) -> str:
    """The environment variable naming the file ``name`` (dots and dashes as ``_``)."""
    return HANDOFF_VARIABLE + name.replace(".", "_").replace("-", "_").upper()


class NotTheHandoff(OSError):
    """The file at the handed-off name is not the one the session made (or is gone)."""


def open_handoff(name: str) -> int:
    """A descriptor for writing the file the session made for this process under
    ``name``: opened by the path it gave, creating nothing and following no link, and
    kept only if it is that very file (its device and inode). NotTheHandoff otherwise."""
    fd = _open_made(name, os.O_WRONLY | os.O_APPEND)
    os.set_blocking(fd, True)
    return fd


def read_handoff(name: str, limit: int) -> bytes:
    """What this process's file ``name`` holds (its first ``limit`` bytes), read through a
    descriptor of its own that is checked to be the file the session made."""
    fd = _open_made(name, os.O_RDONLY)
    try:
        return read_span(fd, 0, limit)
    finally:
        os.close(fd)


def _open_made(name: str, flags: int) -> int:
    """The file the session made under ``name`` (its path, device and inode handed down
    in the environment), opened with ``flags``, creating nothing and following no link
    (without blocking: a FIFO put there is not waited on); NotTheHandoff if it is not
    that very file."""
    spec = os.environ.get(handoff_variable(name))
    if not spec:
        raise NotTheHandoff(f"no {name} was made for this process")
    path, device, inode = spec.rsplit(":", 2)
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (int(device), int(inode)):
            raise NotTheHandoff(f"{path} is no longer the file made for this process")
    except BaseException:
        os.close(fd)
        raise
    return fd
