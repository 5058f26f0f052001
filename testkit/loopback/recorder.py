"""An update sink that remembers what it got and can be waited on (tests, benchmarks)."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Callable

from collectors.protocol import Hello, Sample
from collectors.updates import NodeMessage, NodeStatusChange, NodeUpdate


class UpdateRecorder:
    """Collects node updates; ``wait_until`` blocks until a condition on them holds.

    Keeps counts, the last ``hello`` and the status history per node rather than
    every message, so it can sit behind a 1,000-node fleet.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.samples: Counter[str] = Counter()
        self.hellos: dict[str, Hello] = {}
        self.last_sample: dict[str, Sample] = {}
        self.first_sample_at: dict[str, float] = {}
        self.status_history: defaultdict[str, list[NodeStatusChange]] = defaultdict(list)
        self.messages = 0
        self._changed = asyncio.Event()

    def __call__(self, update: NodeUpdate) -> None:
        """The :data:`~collectors.updates.UpdateSink` entry point."""
        if isinstance(update, NodeMessage):
            self.messages += 1
            message = update.message
            if isinstance(message, Sample):
                self.samples[update.node] += 1
                self.last_sample[update.node] = message
                self.first_sample_at.setdefault(update.node, update.received)
            elif isinstance(message, Hello):
                self.hellos[update.node] = message
        else:
            self.status_history[update.node].append(update)
        self._changed.set()

    def status(self, node: str) -> str | None:
        """The node's latest status, or None before its first."""
        history = self.status_history.get(node)
        return history[-1].status if history else None

    def statuses_seen(self, node: str) -> list[str]:
        """Every status the node went through, in order."""
        return [change.status for change in self.status_history.get(node, [])]

    async def wait_until(self, condition: Callable[[], bool], within: float) -> None:
        """Return once ``condition()`` holds, re-checked after every update.

        Raises:
            TimeoutError: it did not hold within ``within`` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not condition():
            self._changed.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {within} s")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                if condition():
                    return
                raise TimeoutError(f"condition not met within {within} s") from None


async def eventually(condition: Callable[[], bool], within: float, poll: float = 0.02) -> None:
    """Wait until ``condition()`` holds for state that posts no update (server side).

    Raises:
        TimeoutError: it did not hold within ``within`` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() >= deadline:
            raise TimeoutError(f"condition not met within {within} s")
        await asyncio.sleep(poll)
