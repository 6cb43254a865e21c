"""What the command says and how it ends: exit codes, one-line messages, the terminal.

Everything the command prints goes through :func:`say`: outside text neutralised, and a
closed pipe (``| head``) ends the command quietly.
"""

from __future__ import annotations

import os
import sys

from torchscan_tui.common.text import neutralise_lines

EXIT_OK = 0

EXIT_WORKLOAD_FAILED = 1

EXIT_USAGE = 2

EXIT_CANCELLED = 130

EXIT_TIMEOUT = 124

EXIT_REGRESSION = 3


def say(text: str, *, err: bool = False) -> None:
    """Print outside text (names, paths, messages) with its controls made visible.

    A reader that goes away (``| head``) ends the output quietly, as ``cat`` does: the
    rest is sent to /dev/null, so neither this print nor the exit flush raises.
    """
    stream = sys.stderr if err else sys.stdout
    try:
        print(neutralise_lines(text), file=stream, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def fail(message: str, code: int = EXIT_USAGE) -> int:
    say(f"torchscan-tui: {message}", err=True)
    return code


def has_terminal() -> bool:
    """Whether a person is there to see the app and type to it (stdin and stdout)."""
    return sys.stdin.isatty() and sys.stdout.isatty()
