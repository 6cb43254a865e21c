"""``python -m torchscan_tui.worker.rank SCRIPT [WORKER OPTIONS] -- ARGS``: one rank's
profile worker, started by ``torch.distributed.run`` (``--nproc-per-node N``).

torchrun starts its ranks itself, so no pipe of ours reaches them: each rank's worker
writes its channel messages (its rank first, then phases, meta, rows, done or error) to
the file the session made for its ``LOCAL_RANK`` (``run/rank_files.py``), opened before
the script can run, which the session follows as it grows (``run/rank_tail.py``).
"""

from __future__ import annotations

import os
import socket
import sys

from torchscan_tui.run.rank_files import NODE_VARIABLE, channel_name, open_handoff
from torchscan_tui.worker.quick_exit import exit_without_teardown


def main(argv: list[str]) -> int:
    worker_args = list(argv)
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    try:
        fd = open_handoff(channel_name(local_rank))
    except OSError as exc:
        print(f"torchscan-tui: rank {rank}: no channel to the session: {exc}", file=sys.stderr)
        return 1
    from torchscan_tui.run.protocol import ChannelWriter, RankMessage

    node = os.environ.get(NODE_VARIABLE, "")
    ChannelWriter(fd).send(RankMessage(rank, local_rank, node, socket.gethostname()))
    cut = worker_args.index("--") if "--" in worker_args else len(worker_args)
    worker_args[cut:cut] = ["--channel-fd", str(fd)]
    from torchscan_tui.worker.main import main as worker_main

    code = worker_main(worker_args)
    from torchscan_tui.worker.node_reports import share_across_nodes

    share_across_nodes()  # a job across nodes: the others' ranks to rank 0's session
    return code


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:]))
