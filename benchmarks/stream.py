"""Target 6: streaming 100k rows from the worker to the UI process (<= 0.2 s).

A forked child plays the worker: it builds the rows (not timed) and sends them with the
worker's own ``send_report`` on a pipe; the parent reads them with ``read_messages`` as the
session does. Timed from the moment the child starts sending to the moment the parent has
decoded the last row. Baseline: the same path with the stdlib json codec (what the channel
falls back to without msgspec); ours: the codec the channel uses when msgspec is present.
The parent checks it got every row, equal to what was sent.

    python -m benchmarks.stream [--rows 100000] [--repeats 5]
"""

from __future__ import annotations

import os
import time

from torchscan_tui import protocol
from torchscan_tui.protocol import ChannelWriter, read_messages
from torchscan_tui.worker import send_report

from ._timing import benchmark_args, minor_faults, print_fault_share, report
from .table import synthetic_rows


def stream_once(rows: list[dict], use_msgspec: bool, faults: list[int] | None = None) -> float:
    saved = protocol._msgspec, protocol._ENCODER
    if not use_msgspec:
        protocol._msgspec, protocol._ENCODER = None, None
    try:
        read_fd, write_fd = os.pipe()
        start_read, start_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: rows in hand, note the start, send
            os.close(read_fd)
            # Rows of its own, as the real worker's are: the parent's, inherited by the
            # fork, shared pages whose reference counts encoding writes to, and timed
            # copy-on-write faults the worker never takes.
            own_rows = synthetic_rows(len(rows))
            os.write(start_write, repr(time.perf_counter()).encode())
            report_ = {"context": {}, "diagnostics": [], "totals": {}, "trace_path": None}
            send_report(ChannelWriter(write_fd), {**report_, "operators": own_rows})
            os._exit(0)
        os.close(write_fd)
        received = []
        faults_before = minor_faults()
        for message in read_messages(read_fd):
            if message["type"] == "rows":
                received.extend(message["rows"])
        finished = time.perf_counter()
        if faults is not None:
            faults.append(minor_faults() - faults_before)
        os.close(read_fd)
        os.waitpid(pid, 0)
        started = float(os.read(start_read, 64))
        os.close(start_read)
        os.close(start_write)
        assert received == rows, "rows arrived changed or incomplete"
        return finished - started  # perf_counter is system-wide (CLOCK_MONOTONIC) on Linux
    finally:
        protocol._msgspec, protocol._ENCODER = saved


def main() -> None:
    args = benchmark_args("rows", repeats=5)
    rows = synthetic_rows(args.rows)
    size = len(protocol.encode({"type": "rows", "rows": rows})) / 2**20
    print(f"{args.rows:,} rows, {size:.1f} MiB of JSON on the channel")
    base, mine, faults = [], [], []
    for _ in range(args.repeats):
        base.append(stream_once(rows, use_msgspec=False))
        mine.append(stream_once(rows, use_msgspec=True, faults=faults))
    print_fault_share("receiving", faults)
    report(
        "streaming rows worker -> UI (stdlib json vs msgspec channel)",
        base,
        mine,
        "absolute: <= 0.2 s",
    )


if __name__ == "__main__":
    main()
