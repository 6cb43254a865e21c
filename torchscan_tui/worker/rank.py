"""``python -m torchscan_tui.worker.rank DIR SCRIPT [WORKER OPTIONS] -- ARGS``: one rank's
profile worker, started by ``torch.distributed.run`` (``--nproc-per-node N``).

torchrun starts its ranks itself, so no pipe of ours reaches them: each rank's worker
writes its channel messages (phases, meta, rows, done or error) to
``DIR/rank-R.local-L.channel`` (torchrun's ``RANK`` and ``LOCAL_RANK``: see
``run/rank_files.py``), a file created for it alone, which the session follows as it
grows (``run/rank_tail.py``).
"""

from __future__ import annotations

import os
import sys

from torchscan_tui.run.rank_files import channel_name
from torchscan_tui.worker.quick_exit import exit_without_teardown


def main(argv: list[str]) -> int:
    folder, *worker_args = argv
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    path = os.path.join(folder, channel_name(rank, local_rank))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    cut = worker_args.index("--") if "--" in worker_args else len(worker_args)
    worker_args[cut:cut] = ["--channel-fd", str(fd)]
    from torchscan_tui.worker.main import main as worker_main

    return worker_main(worker_args)


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:]))
