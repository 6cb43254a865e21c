"""Calling ``workload()`` so that its work is done, and ending what it leaves behind.

The profile worker calls the workload once. Some workloads do their work only when their
result is driven: ``async def workload()`` returns a coroutine (nothing ran, the profile
would be empty), a generator function returns a generator. :class:`CompletedCall` awaits
or iterates such a result inside the profiled call, and says it did in a diagnostic.
:func:`join_lingering` waits a while for the non-daemon threads a workload started, so a
thread that never ends cannot keep the worker alive forever; it names those that remain.
No torch, no textual.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

from torchscan_tui.analysis import diagnostics as diag
from torchscan_tui.analysis.records import Note

THREAD_GRACE_S = 5.0  # how long the worker waits for a workload's threads after the profile


async def _drain_async(generator: Any) -> None:
    async for _ in generator:
        pass


class CompletedCall:
    """``fn`` as a call whose result, a coroutine or a generator, is driven to its end."""

    def __init__(self, fn: Callable[[], Any], description: str):
        self.fn = fn
        self.description = description
        self.notes: list[Note] = []

    def __call__(self) -> Any:
        result = self.fn()
        if inspect.iscoroutine(result):
            self._note("workload_awaited", "returned a coroutine (async def)", "awaited it with "
                       "asyncio.run")  # fmt: skip
            return asyncio.run(result)
        if inspect.isasyncgen(result):
            self._note("workload_iterated", "returned an async generator", "iterated it to "
                       "its end")  # fmt: skip
            return asyncio.run(_drain_async(result))
        if inspect.isgenerator(result):
            self._note("workload_iterated", "returned a generator", "iterated it to its end")
            for _ in result:
                pass
        return result

    def _note(self, code: str, what: str, done: str) -> None:
        self.notes.append(
            diag.make(
                code,
                f"{self.description} {what}: torchscan-tui {done} inside the profile, so "
                "its work is in the rows (the call alone would have run none of it).",
            )
        )


def join_lingering(before: set[threading.Thread], grace_s: float = THREAD_GRACE_S) -> list[str]:
    """Wait up to ``grace_s`` for the non-daemon threads started since ``before``; the
    names of those still running."""
    deadline = time.monotonic() + grace_s
    started = [
        thread
        for thread in threading.enumerate()
        if thread not in before and not thread.daemon and thread is not threading.main_thread()
    ]
    for thread in started:
        thread.join(max(deadline - time.monotonic(), 0))
    return [thread.name for thread in started if thread.is_alive()]


def threads_left_running(names: list[str], grace_s: float = THREAD_GRACE_S) -> Note:
    listed = ", ".join(names)
    return diag.make(
        "threads_left_running",
        f"workload() left {len(names)} non-daemon thread(s) running ({listed}); the worker "
        f"waited {grace_s:g} s, then ended them with itself: what they did after the "
        "profile is not in it, and their work was cut short. Join them before returning, "
        "or make them daemon threads.",
    )
