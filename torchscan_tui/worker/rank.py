"""``python -m torchscan_tui.worker.rank DIR SCRIPT [WORKER OPTIONS] -- ARGS``: one rank's
profile worker, started by ``torch.distributed.run`` (``--nproc-per-node N``).

torchrun starts its ranks itself, so no pipe of ours reaches them: each rank's worker
writes its channel messages (phases, meta, rows, done or error) to ``DIR/rank-R.channel``
(R from torchrun's ``RANK``), a file created for it alone, and the session reads every
rank's file once the job has ended.
"""

from __future__ import annotations

import os
import sys

from torchscan_tui.worker.quick_exit import exit_without_teardown


def channel_path(folder: str, rank: int) -> str:
    return os.path.join(folder, f"rank-{rank}.channel")


def main(argv: list[str]) -> int:
    folder, *worker_args = argv
    rank = int(os.environ.get("RANK", "0"))
    fd = os.open(channel_path(folder, rank), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    cut = worker_args.index("--") if "--" in worker_args else len(worker_args)
    worker_args[cut:cut] = ["--channel-fd", str(fd)]
    from torchscan_tui.worker.main import main as worker_main

    return worker_main(worker_args)


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:]))
