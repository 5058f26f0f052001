"""Waiting on the runtime: poll a condition with a deadline, never a bare sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from fleet.model import FleetSnapshot
from fleet.runtime import FleetRuntime


async def wait_for_snapshot(
    runtime: FleetRuntime, accept: Callable[[FleetSnapshot], bool], within_s: float = 30.0
) -> FleetSnapshot:
    """The first snapshot ``accept`` takes, waiting at most ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        snap = runtime.latest()
        if snap is not None and accept(snap):
            return snap
        await asyncio.sleep(0.1)
    raise AssertionError(f"no accepted snapshot in {within_s} s; last: {runtime.latest()}")
