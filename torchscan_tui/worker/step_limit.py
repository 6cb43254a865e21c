"""``python -m torchscan_tui.worker.step_limit K SCRIPT [ARGS]``: run a script as
``__main__``, ending it after its K-th optimizer step (``--rss-steps K``).

The peak-RSS pass of a long job (hours, millions of steps) need not run to the end: this
runs it as ``python SCRIPT ARGS`` would, with one global post-step hook on every
torch.optim optimizer, and exits with status 0 from the K-th ``optimizer.step()``
(``SystemExit`` runs the script's ``finally`` blocks and ends its DataLoader workers as
any exit does). The peak is then the run's up to step K, and the report says so. A
script with fewer steps runs to its end.
"""

from __future__ import annotations

import os
import runpy
import sys


class StepLimitReached(SystemExit):
    """The K-th step is done: exit 0 (a SystemExit, past the script's ``except Exception``)."""


def main(argv: list[str]) -> None:
    limit, script, *args = argv
    remaining = int(limit)

    from torch.optim.optimizer import register_optimizer_step_post_hook

    def counted(optimizer: object, args: object, kwargs: object) -> None:
        nonlocal remaining
        remaining -= 1
        if remaining == 0:
            raise StepLimitReached(0)

    register_optimizer_step_post_hook(counted)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as ``python SCRIPT`` has it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
