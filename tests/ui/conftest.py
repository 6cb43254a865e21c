"""Helpers to drive the real app: wait on the run's end, never on fixed sleeps."""

from __future__ import annotations

import asyncio

import pytest


async def wait_for_run(pilot, runs: int = 1, timeout: float = 60.0) -> None:
    """Until the app has applied ``runs`` RunFinished events (checked each frame)."""
    app = pilot.app

    async def finished() -> None:
        while app.run_finished_count < runs:
            await pilot.pause()

    await asyncio.wait_for(finished(), timeout)
    await pilot.pause()


async def wait_until(pilot, predicate, timeout: float = 10.0) -> None:
    """Until ``predicate()`` holds (checked each frame), for changes made by timers."""

    async def holds() -> None:
        while not predicate():
            await pilot.pause()

    await asyncio.wait_for(holds(), timeout)


@pytest.fixture
def wait():
    return wait_for_run


@pytest.fixture
def until():
    return wait_until
