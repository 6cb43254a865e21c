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

from torchscan_tui.run.distributed import rank_channels
from torchscan_tui.run.events import EventCallback, PhaseChanged, RowsReceived
from torchscan_tui.run.protocol import NotAMessage, decode

READ_CHUNK = 1 << 20
POLL_S = 0.2  # how often the files are looked at while the job runs


class RankTail:
    """Each rank's new messages, as ``(rank, message)`` pairs, a look at a time."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
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
                found.append((rank, message))
        return found

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def follow_ranks(folder: str, nproc: int, job_over: threading.Event, emit: EventCallback) -> None:
    """While the job runs (until ``job_over``): each rank's rows, tagged ``rank``, as its
    worker writes them, and the step the slowest of the ``nproc`` ranks has reached (a
    rank not started yet is at step 0); a last look once the job has ended."""
    tail = RankTail(folder)
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
                    for row in message["rows"]:
                        row["rank"] = rank
                    emit(RowsReceived(message["rows"]))
                elif kind == "phase" and message.get("step") is not None:
                    steps[rank] = message["step"]
                    started = tail.ranks
                    slowest = min(steps.get(r, 0) for r in started)
                    slowest = slowest if len(started) >= nproc else 0
                    if (slowest, message.get("steps")) != said:
                        said = (slowest, message.get("steps"))
                        emit(PhaseChanged("profiling", *said))
            if over:
                return
    finally:
        tail.close()
