"""Target 6: streaming 100k rows from the worker to the UI process (<= 0.2 s).

A forked child plays the worker: it builds the rows (not timed) and sends them with the
worker's own ``send_report`` on a pipe; the parent reads them with ``read_messages`` as the
session does. Timed from the moment the child starts sending to the moment the parent has
decoded the last row. Baseline: the same batches as lines of the stdlib json codec (what
the channel used before msgspec); ours: the channel itself (msgspec structs). The parent
checks it got every row, equal to what was sent.

For reference it also times the issue's own yardstick, a bare msgspec pipe (all rows
encoded as one message, written, read to the end, decoded once with the collector off,
its best case): the issue measured it
at ~0.15 s where it set 0.2 s, and this machine's speed varies by the hour, so our time
is printed as a ratio to it as well (the target's ratio: 0.2 / 0.15 = 1.33).

    python -m benchmarks.stream [--rows 100000] [--repeats 5]
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from collections.abc import Callable

from torchscan_tui.run import protocol
from torchscan_tui.run.protocol import ROW_BATCH, ChannelWriter, RowsMessage, read_messages
from torchscan_tui.worker.main import send_report

from ._timing import benchmark_args, minor_faults, print_fault_share, report
from .table import real_rows


def timed_transfer(
    rows: list[dict],
    send: Callable[[int, list[dict]], None],
    receive: Callable[[int], list[dict]],
) -> float:
    """Seconds from a forked child starting ``send(fd, rows)`` to ``receive(fd)`` returning
    every row in this process; checks they arrived unchanged."""
    read_fd, write_fd = os.pipe()
    start_read, start_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: rows in hand, note the start, send
        os.close(read_fd)
        # Rows of its own, as the real worker's are: the parent's, inherited by the
        # fork, shared pages whose reference counts encoding writes to, and timed
        # copy-on-write faults the worker never takes.
        own_rows = real_rows(len(rows))
        os.write(start_write, repr(time.perf_counter()).encode())
        send(write_fd, own_rows)
        os._exit(0)
    os.close(write_fd)
    received = receive(read_fd)
    finished = time.perf_counter()
    os.close(read_fd)
    os.waitpid(pid, 0)
    started = float(os.read(start_read, 64))
    os.close(start_read)
    os.close(start_write)
    assert received == rows, "rows arrived changed or incomplete"
    return finished - started  # perf_counter is system-wide (CLOCK_MONOTONIC) on Linux


def stream_once(rows: list[dict], faults: list[int] | None = None) -> float:
    """Our channel: the worker's ``send_report``, the session's ``read_messages``."""

    def send(fd: int, own_rows: list[dict]) -> None:
        report_ = {"context": {}, "diagnostics": [], "totals": {}, "trace_path": None}
        send_report(ChannelWriter(fd), {**report_, "operators": own_rows})

    def receive(fd: int) -> list[dict]:
        received = []
        faults_before = minor_faults()
        for message in read_messages(fd):
            if isinstance(message, RowsMessage):
                received.extend(message.rows)
        if faults is not None:
            faults.append(minor_faults() - faults_before)
        return received

    return timed_transfer(rows, send, receive)


def stdlib_json_lines(rows: list[dict]) -> float:
    """The baseline: the same batches, a line of stdlib JSON each."""

    def send(fd: int, own_rows: list[dict]) -> None:
        with os.fdopen(fd, "wb") as pipe:
            for start in range(0, len(own_rows), ROW_BATCH):
                batch = {"type": "rows", "rows": own_rows[start : start + ROW_BATCH]}
                pipe.write(json.dumps(batch).encode() + b"\n")

    def receive(fd: int) -> list[dict]:
        received = []
        with os.fdopen(fd, "rb", closefd=False) as pipe:
            for line in pipe:
                received.extend(json.loads(line)["rows"])
        return received

    return timed_transfer(rows, send, receive)


def bare_msgspec_pipe(rows: list[dict]) -> float:
    """The issue's yardstick: one msgspec message of every row through a pipe."""
    import msgspec

    def send(fd: int, own_rows: list[dict]) -> None:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(msgspec.json.encode(own_rows))

    def receive(fd: int) -> list[dict]:
        gc.disable()  # its best case: the collector would walk the new rows again and again
        try:
            with os.fdopen(fd, "rb", closefd=False) as pipe:
                return msgspec.json.decode(pipe.read())
        finally:
            gc.enable()

    return timed_transfer(rows, send, receive)


def main() -> None:
    args = benchmark_args("rows", repeats=5)
    rows = real_rows(args.rows)
    size = len(protocol.encode(RowsMessage(rows))) / 2**20
    print(f"{args.rows:,} rows, {size:.1f} MiB of JSON on the channel")
    base, mine, faults, bare = [], [], [], []
    for _ in range(args.repeats):
        base.append(stdlib_json_lines(rows))
        mine.append(stream_once(rows, faults=faults))
        bare.append(bare_msgspec_pipe(rows))
    print_fault_share("receiving", faults)
    report(
        "streaming rows worker -> UI (stdlib json vs msgspec channel)",
        base,
        mine,
        "absolute: <= 0.2 s",
    )
    print(
        f"  the issue's yardstick, a bare msgspec pipe: median {statistics.median(bare) * 1e3:.1f}"
        f" ms (min {min(bare) * 1e3:.1f}, max {max(bare) * 1e3:.1f}); ours / it = "
        f"{statistics.median(mine) / statistics.median(bare):.2f} (the target's: 1.33)"
    )


if __name__ == "__main__":
    main()
