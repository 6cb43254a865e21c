"""Helpers to drive the real app: wait on the run's end, never on fixed sleeps."""

from __future__ import annotations

import asyncio

import pytest


async def wait_for_run(pilot, runs: int = 1, timeout: float = 60.0) -> None:
    """Until the app has applied ``runs`` RunFinished events (checked each frame)."""
    app = pilot.app

    async def finished() -> None:
        while app.main_screen.run_finished_count < runs:
            await pilot.pause()

    await asyncio.wait_for(finished(), timeout)
    await pilot.pause()


async def wait_until(pilot, predicate, timeout: float = 10.0, idle: bool = True) -> None:
    """Until ``predicate()`` holds, for changes made by timers: checked each time the app
    is idle, or (``idle=False``) every 10 ms while it works, to catch it mid-way."""

    async def holds() -> None:
        while not predicate():
            if idle:
                await pilot.pause()
            else:
                await asyncio.sleep(0.01)

    await asyncio.wait_for(holds(), timeout)


async def wait_until_applied(pilot, source) -> None:
    """Until a replay held before its last event has had every other event applied."""
    screen = pilot.app.main_screen
    await wait_until(pilot, lambda: source.holding.is_set() and not screen.pump)
    await pilot.pause()


@pytest.fixture
def wait():
    return wait_for_run


@pytest.fixture
def until():
    return wait_until


@pytest.fixture
def held():
    return wait_until_applied
