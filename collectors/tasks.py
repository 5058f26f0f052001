"""Stopping asyncio tasks for good, whatever they were awaiting when told to stop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


async def cancel_all(tasks: Sequence[asyncio.Task[Any]], grace_s: float) -> None:
    """Cancel ``tasks`` and wait until every one has ended, cancelling again any that
    is still running ``grace_s`` after its last cancellation.

    On Python 3.11 ``asyncio.wait_for`` (asyncssh runs its connect under it) drops a
    cancellation that arrives in the same loop turn as the result it waits for: a node
    task cancelled just as its connection came up went on streaming, and stopping a
    fleet that was reconnecting 100 nodes waited for ever; a viewer's tick inside a
    NATS request did the same to its ``stop()``. The tasks keep their exceptions, for
    their done callbacks or the caller to read.
    """
    pending = set(tasks)
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=grace_s)
