"""Waiting on the runtime: poll a condition with a deadline, never a bare sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from fleet.model import FleetSnapshot
from gpufleet.runtime import FleetRuntime


async def wait_for_snapshot(
    runtime: FleetRuntime, accept: Callable[[FleetSnapshot], bool], within_s: float = 30.0
) -> FleetSnapshot:
    """The first snapshot ``accept`` takes, waiting at most ``within_s`` seconds."""
    taken: list[FleetSnapshot] = []

    def accepted() -> bool:
        snap = runtime.latest()
        if snap is not None and accept(snap):
            taken.append(snap)
        return bool(taken)

    await wait_until(
        accepted, within_s, lambda: f"no accepted snapshot; last: {runtime.latest()}", every_s=0.1
    )
    return taken[0]


async def wait_until(
    condition: Callable[[], bool],
    within_s: float = 30.0,
    what: str | Callable[[], str] = "",
    every_s: float = 0.05,
) -> float:
    """Poll ``condition`` until it holds; the seconds it took. Fails after ``within_s``."""

    async def holds() -> bool:
        return condition()

    return await wait_until_async(holds, within_s, what, every_s)


async def wait_until_async(
    condition: Callable[[], Awaitable[bool]],
    within_s: float = 30.0,
    what: str | Callable[[], str] = "",
    every_s: float = 0.05,
) -> float:
    """``wait_until`` for a condition that must await (an HTTP query in a thread, say);
    ``what`` may be a callable, to name the last state seen when the time is up."""
    started = time.monotonic()
    while not await condition():
        if time.monotonic() - started > within_s:
            said = what() if callable(what) else what
            raise AssertionError(f"not within {within_s} s: {said or 'condition not met'}")
        await asyncio.sleep(every_s)
    return time.monotonic() - started


def wait_until_blocking(condition: Callable[[], bool], within_s: float = 30.0) -> None:
    """``wait_until`` for code outside an event loop (threads, subprocess checks)."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within_s} s: condition not met")
        time.sleep(0.05)
