"""A command line's own options and the script's arguments, split at the first ``--``.

The command (``torchscan-tui [OPTIONS] SCRIPT -- ARGS``) and the worker it starts
(``python -m torchscan_tui.worker SCRIPT [OPTIONS] -- ARGS``) read theirs the same way.
"""

from __future__ import annotations

from collections.abc import Sequence


def split_script_args(argv: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """Our options before the first ``--``, the script's arguments after it."""
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], tuple(argv[cut + 1 :])
    return argv, ()
