"""A job across nodes in one session: each rank's channel travels to rank 0's node over
the job's own c10d store (issue 31, point 2).

Under torchrun each node's session follows only the ranks it started: their channel
files are on its disk. A job of several nodes already has a store every rank reaches,
the one its rendezvous made (``MASTER_ADDR``/``MASTER_PORT``: torchrun's agent store, as
``init_process_group("env://")`` uses it). So, once its profile is done, each rank on a
node other than rank 0's puts its whole channel (the lines it wrote to its own file,
read back from it) under ``torchscan/<run id>/channel/<rank>``; rank 0's worker waits for
them (up to :data:`WAIT_SECONDS` after its own profile) and appends each to the
``remote.channel`` file its session made, which that session follows as it follows its
own ranks' files. No transport of ours: the job's own store carries the bytes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from torchscan_tui.run.rank_files import (
    NODE_VARIABLE,
    REMOTE_CHANNEL,
    REMOTE_PEAKS,
    channel_name,
    open_handoff,
    read_handoff,
)

WAIT_SECONDS = 120.0  # how long rank 0 waits for the other nodes' channels
READ_WAIT_SECONDS = 30.0  # how long a node's peak collector waits for the others to read
MAX_CHANNEL = 256 << 20  # the most of its channel a rank sends


def prefix_of(environ: os._Environ | dict) -> str:
    """This job's keys in the store: ``torchscan/<run id>``."""
    return f"torchscan/{environ.get('TORCHELASTIC_RUN_ID', 'none')}"


def spans_nodes(environ: os._Environ | dict) -> bool:
    """Whether this torchrun job has ranks on other nodes than this one."""
    try:
        return int(environ.get("WORLD_SIZE", "1")) > int(environ.get("LOCAL_WORLD_SIZE", "1"))
    except ValueError:
        return False


def this_nodes_ranks(environ: os._Environ | dict) -> range:
    """The global ranks torchrun gave this node: contiguous, from this rank's less its
    local rank."""
    rank, local = int(environ["RANK"]), int(environ["LOCAL_RANK"])
    return range(rank - local, rank - local + int(environ["LOCAL_WORLD_SIZE"]))


def job_store(environ: os._Environ | dict, seconds: float) -> Any:
    """A client of the job's store (the rendezvous's: torchrun's agent store)."""
    from torch.distributed import TCPStore

    return TCPStore(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), is_master=False,
                    timeout=timedelta(seconds=seconds))  # fmt: skip


def share_across_nodes(environ: os._Environ | dict = os.environ) -> None:
    """After this rank's profile: put its channel in the job's store; rank 0 collects
    the other nodes' into its session's ``remote.channel``. Says on stderr what failed,
    never fails the rank (its own node's session has its rows whatever happens here)."""
    if not spans_nodes(environ):
        return
    rank, local = int(environ["RANK"]), int(environ["LOCAL_RANK"])
    prefix = prefix_of(environ)
    try:
        store = job_store(environ, WAIT_SECONDS)
        mine = this_nodes_ranks(environ)
        if 0 not in mine:  # a rank of another node than rank 0's
            channel = read_handoff(channel_name(local), MAX_CHANNEL)
            store.set(f"{prefix}/channel/{rank}", channel)
        if rank == 0:
            others = [r for r in range(int(environ["WORLD_SIZE"])) if r not in mine]
            collect(store, prefix, others, WAIT_SECONDS, time.monotonic)
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        print(f"torchscan-tui: rank {rank}: the job's store did not carry the ranks of "
              f"other nodes: {exc}", file=sys.stderr)  # fmt: skip


def share_peak(peak_text: str, environ: os._Environ | dict = os.environ) -> None:
    """The peak pass's end (``worker/rank_rss.py``): every rank adds ``NODE LOCAL_RANK
    PEAK`` to the job's store, and each node's local rank 0 writes the other nodes' lines
    into its session's ``remote.rss``. A c10d rendezvous may hand out global ranks in
    another order than in the profile pass, so the node that was rank 0's may not be so
    now: every node collects, and its node and local rank name a peak, not its rank."""
    if not spans_nodes(environ):
        return
    rank, local = int(environ["RANK"]), int(environ["LOCAL_RANK"])
    prefix = prefix_of(environ)
    node = environ.get(NODE_VARIABLE, "")
    try:
        store = job_store(environ, WAIT_SECONDS)
        index = store.add(f"{prefix}/peaks", 1)
        store.set(f"{prefix}/peak/{index}", f"{node} {local} {peak_text}\n")
        if local == 0:
            world = int(environ["WORLD_SIZE"])
            nodes = max(world // int(environ["LOCAL_WORLD_SIZE"]), 1)
            arrived = _wait_for_count(store, f"{prefix}/peaks", world)
            fd = open_handoff(REMOTE_PEAKS)
            try:
                for found in range(1, arrived + 1):
                    line = store.get(f"{prefix}/peak/{found}")
                    if not line.startswith(f"{node} ".encode()):
                        os.write(fd, line)
            finally:
                os.close(fd)
            store.add(f"{prefix}/peaks_read", 1)  # the store's host waits for every reader
            _wait_for_count(store, f"{prefix}/peaks_read", nodes, READ_WAIT_SECONDS)
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        print(f"torchscan-tui: rank {rank}: the job's store did not carry the other nodes' "
              f"peaks: {exc}", file=sys.stderr)  # fmt: skip


def _wait_for_count(store: Any, counter: str, count: int, seconds: float = WAIT_SECONDS) -> int:
    """Until ``counter`` reaches ``count`` or ``seconds`` pass; its value then."""
    deadline = time.monotonic() + seconds
    while (value := store.add(counter, 0)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return int(value)


def collect(store: Any, prefix: str, ranks: list[int], seconds: float,
            clock: Callable[[], float]) -> list[int]:  # fmt: skip
    """Append each of ``ranks``' channels to ``remote.channel`` as it arrives, until all
    have or ``seconds`` have passed; returns the ranks that never came. (A file that is
    not the session's raises ``NotTheHandoff``, an ``OSError``.)"""
    fd = open_handoff(REMOTE_CHANNEL)
    waiting = list(ranks)
    deadline = clock() + seconds
    try:
        while waiting and clock() < deadline:
            arrived = [r for r in waiting if store.check([f"{prefix}/channel/{r}"])]
            for rank in arrived:
                data = memoryview(store.get(f"{prefix}/channel/{rank}"))
                while data:
                    data = data[os.write(fd, data) :]
                waiting.remove(rank)
            if waiting:
                time.sleep(0.2)
    finally:
        os.close(fd)
    return waiting
