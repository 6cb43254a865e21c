"""Follow each rank's channel file while a torchrun job runs (no torch here).

torchrun starts the ranks, so no pipe of ours reaches them: each rank's worker appends
its channel messages to ``rank-R.local-L.channel`` in the run's private folder (see
``worker/rank.py``; R is the global rank). :class:`RankTail` reads what each file has
gained since the last look, whole lines only (a line still being written waits for its
end), so the session can pass each rank's rows and steps on while the job runs, instead
of all at its end.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from torchscan_tui.run.distributed import RankChannel, rank_channels
from torchscan_tui.run.events import EventCallback, PhaseChanged, RowsReceived
from torchscan_tui.run.protocol import NotAMessage, decode

READ_CHUNK = 1 << 20
POLL_S = 0.2  # how often the files are looked at while the job runs


class RankTail:
    """Each rank's new messages, as ``(rank, message)`` pairs, a look at a time; each
    rank's report is built from them as they come (``channels``), so a file followed to
    its end need not be read again. ``complete``: the files were read to their end after
    the job had ended (set by :func:`follow_ranks`)."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.channels: dict[int, RankChannel] = {}
        self.complete = False
        self._fds: dict[int, int] = {}
        self._partial: dict[int, bytes] = {}

    @property
    def ranks(self) -> list[int]:
        """The ranks whose files have been found (each rank creates its file at start)."""
        return sorted(self._fds)

    def poll(self) -> list[tuple[int, dict]]:
        """The messages every rank has finished writing since the last poll, in order per
        rank. Lines that are no message are skipped; a forged one comes as ``invalid``."""
        for rank, (path, _) in rank_channels(self.folder).items():
            if rank not in self._fds:
                try:
                    self._fds[rank] = os.open(path, os.O_RDONLY)
                except FileNotFoundError:  # gone between the listing and now
                    continue
        found: list[tuple[int, dict]] = []
        for rank, fd in self._fds.items():
            parts = [self._partial.pop(rank, b"")]
            while chunk := os.read(fd, READ_CHUNK):
                parts.append(chunk)
            complete, _, rest = b"".join(parts).rpartition(b"\n")
            if rest:
                self._partial[rank] = rest
            for line in complete.split(b"\n"):
                if not line:
                    continue
                try:
                    message = decode(line)
                except NotAMessage as exc:
                    message = {"type": "invalid", "problem": str(exc)}
                except ValueError:
                    continue
                self.channels.setdefault(rank, RankChannel()).take(message)
                found.append((rank, message))
        return found

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def follow_ranks(
    tail: RankTail, nproc: int, job_over: threading.Event, emit: EventCallback
) -> None:
    """While the job runs (until ``job_over``): each rank's rows, tagged ``rank`` (copies:
    the rank's own report keeps them as sent), as its worker writes them, and the step
    the slowest of the ``nproc`` ranks has reached (a rank not started yet is at step 0);
    a last look once the job has ended, after which ``tail.complete`` is set."""
    steps: dict[int, int] = {}
    said: tuple | None = None
    try:
        while True:
            over = job_over.wait(POLL_S)
            try:
                found = tail.poll()
            except OSError:  # the folder is unreadable: the rows come at the job's end
                return
            for rank, message in found:
                kind = message["type"]
                if kind == "rows":
                    emit(RowsReceived([{**row, "rank": rank} for row in message["rows"]]))
                elif kind == "phase" and message.get("step") is not None:
                    steps[rank] = message["step"]
                    started = tail.ranks
                    slowest = min(steps.get(r, 0) for r in started)
                    slowest = slowest if len(started) >= nproc else 0
                    if (slowest, message.get("steps")) != said:
                        said = (slowest, message.get("steps"))
                        emit(PhaseChanged("profiling", *said))
            if over:
                tail.complete = True
                return
    finally:
        tail.close()
