"""A :class:`~torchscan_tui.common.forked.Forked` that says which process made its call,
for the tests that check a child made it (an in-line fallback must not pass for one)."""

from __future__ import annotations

import os

from torchscan_tui.common.forked import Forked


def forked_recording(made_in: list[int]) -> type[Forked]:
    """A Forked whose every result also puts the pid of the process that made the call
    in ``made_in``."""

    class Recorded(Forked):
        def __init__(self, call, fork=True):
            super().__init__(lambda: (os.getpid(), call()), fork)

        def result(self, timeout=None):
            pid, value = super().result(timeout)
            made_in.append(pid)
            return value

    return Recorded
