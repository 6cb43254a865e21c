"""Follow each rank's channel while a torchrun job runs (no torch here).

torchrun starts the ranks, so no pipe of ours reaches them: each rank's worker appends
its channel messages to the file the session made for its local rank (see
``run/handoff.py`` and ``worker/rank.py``), its first message saying its global rank.
:class:`RankTail` reads what each file has gained since the last look, through the
session's own descriptors, whole lines only (a line still being written waits for its
end, up to :data:`MAX_LINE`), so the session can pass each rank's rows and steps on while
the job runs, and has each rank's report when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from torchscan_tui.run.distributed import RankChannel
from torchscan_tui.run.events import EventCallback, PhaseChanged, RowsReceived
from torchscan_tui.run.handoff import HandoffFile
from torchscan_tui.run.protocol import (
    MAX_LINE,
    InvalidMessage,
    PhaseMessage,
    RankMessage,
    Read,
    RowsMessage,
    decode_line,
)

READ_CHUNK = 1 << 20
POLL_S = 0.2  # how often the files are looked at while the job runs


class RankTail:
    """Each rank's new messages, as ``(rank, message)`` pairs, a look at a time; each
    rank's report is built from them as they come (``channels``, by global rank; a rank
    is known once its first message has said which it is)."""

    def __init__(self, files: Mapping[int, HandoffFile], remote: HandoffFile | None = None):
        self.files = dict(files)  # by local rank
        # A job across nodes: the other nodes' ranks' channels, one after another, as
        # rank 0 collected them from the job's store (worker/node_reports.py).
        self.remote = remote
        self.channels: dict[int, RankChannel] = {}  # by global rank
        self._by_local: dict[int, RankChannel] = {}
        self._partial: dict[int, bytes] = {}
        self.remote_channels: list[RankChannel] = []

    @property
    def every_channel(self) -> list:
        """Each local rank's channel, those that never said their rank included, then
        the other nodes' ranks that rank 0 collected."""
        return self.local_channels + self.remote_channels

    @property
    def local_channels(self) -> list:
        """Each local rank's channel, those that never said their rank included."""
        return [self._by_local.setdefault(local, RankChannel(local)) for local in self.files]

    @property
    def ranks(self) -> list[int]:
        """The global ranks that have said who they are (each does as it starts)."""
        return sorted(self.channels)

    def poll(self) -> list[tuple[int, dict]]:
        """The messages every rank has finished writing since the last poll, in order per
        rank. Lines that are no message are skipped; a forged one, or a line longer than
        :data:`MAX_LINE`, comes as ``invalid`` and ends the reading of that rank."""
        found: list[tuple[int, dict]] = []
        for local, handoff in self.files.items():
            channel = self._by_local.setdefault(local, RankChannel(local))
            if channel.closed:
                continue
            parts = [self._partial.pop(local, b"")]
            size = len(parts[0])
            while size <= 2 * MAX_LINE and (chunk := handoff.read_new(READ_CHUNK)):
                parts.append(chunk)  # past 2 lines' bound the rest waits for the next look
                size += len(chunk)
            complete, _, rest = b"".join(parts).rpartition(b"\n")
            for line in complete.split(b"\n"):
                if line and not channel.closed:
                    self._take(channel, decode_line(line), found)
            if len(rest) > MAX_LINE:
                channel.take(InvalidMessage(f"a line over {MAX_LINE} bytes"))
            elif rest:
                self._partial[local] = rest
        if self.remote is not None:
            self._poll_remote(found)
        return found

    def _poll_remote(self, found: list) -> None:
        """The other nodes' channels: each begins with its rank's own rank message, which
        opens a channel of its own; the lines after it are that rank's."""
        assert self.remote is not None
        data = self._partial.pop(-1, b"") + self.remote.read_new(READ_CHUNK * 8)
        complete, _, rest = data.rpartition(b"\n")
        for line in complete.split(b"\n"):
            message = decode_line(line) if line else None
            if message is None:
                continue
            if isinstance(message, RankMessage) and message.rank not in self.channels:
                self.remote_channels.append(RankChannel(message.local_rank))
            if not self.remote_channels:
                continue  # nothing before a rank's own first message counts
            channel = self.remote_channels[-1]
            if not channel.closed:
                self._take(channel, message, found)
        if len(rest) <= MAX_LINE and rest:
            self._partial[-1] = rest

    def _take(self, channel: RankChannel, message: Read | None, found: list) -> None:
        if message is None:
            return  # noise: no message
        channel.take(message)
        if channel.rank is not None:
            self.channels[channel.rank] = channel
            found.append((channel.rank, message))

    def close(self) -> None:
        for handoff in self.files.values():
            handoff.close()
        if self.remote is not None:
            self.remote.close()


def follow_ranks(
    tail: RankTail, nproc: int, job_over: threading.Event, emit: EventCallback
) -> None:
    """While the job runs (until ``job_over``): each rank's rows, tagged ``rank`` (copies:
    the rank's own report keeps them as sent), as its worker writes them, and the step
    the slowest of the ``nproc`` ranks has reached (a rank not started yet is at step 0);
    a last look once the job has ended."""
    steps: dict[int, int] = {}
    said: tuple | None = None
    while True:
        over = job_over.wait(POLL_S)
        for rank, message in tail.poll():
            match message:
                case RowsMessage(rows=rows):
                    emit(RowsReceived([{**row, "rank": rank} for row in rows]))
                case PhaseMessage(step=int(step), steps=of):
                    steps[rank] = step
                    started = tail.ranks
                    slowest = min(steps.get(r, 0) for r in started)
                    slowest = slowest if len(started) >= nproc else 0
                    if (slowest, of) != said:
                        said = (slowest, of)
                        emit(PhaseChanged("profiling", *said))
        if over:
            return
