"""The ``torchscan-tui`` command: arguments, headless runs, and starting the app.

May import every other package; only the app itself imports textual, and only when a
terminal run needs it.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The ``torchscan-tui`` entry point (``torchscan_tui.cli:main``, as installed scripts
    name it): the command itself is :func:`torchscan_tui.cli.command.main`, imported
    with the collector paused (:mod:`~torchscan_tui.common.startup`)."""
    from torchscan_tui.common.startup import pause_for_start

    pause_for_start()
    from torchscan_tui.cli.command import main as command_main

    return command_main(argv)
