"""A shard answering ``processes`` requests: one agent run per node, shared, bounded.

Each read runs ``gpufleet-agent processes`` on the node over its connection (up to
20 s on a slow node). Any viewer may ask, and every open node screen asks every few
seconds, so the shard never lets viewers multiply that work: a node is read by one
run at a time and everyone asking meanwhile gets that run's answer; an answer stays
fresh for a moment; a few nodes are read at once and more are answered "busy"; and
requests waiting for an answer are capped. Requests run beside the subscription, so
a slow node delays no other node's answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from cluster.process_wire import encode_failure, encode_listing
from collectors.tasks import cancel_all
from fleet.facade import ProcessReader, UnknownNode

FRESH_S = 2.0  # an answer read this recently is given again rather than read anew
MAX_READS_AT_ONCE = 16  # nodes whose processes are being read at one time
MAX_WAITING = 256  # requests waiting for an answer; more are answered "busy" at once

# Which fleet collects a node (the shard's own, or the one adopting a silent shard's).
Holder = Callable[[str], ProcessReader | None]
Respond = Callable[[bytes], Awaitable[None]]


class ProcessAnswers:
    """Answers ``processes`` for the nodes this shard collects.

    Args:
        holder: the fleet that collects a node, or None when this shard does not.
        shard: the shard's name for refusals ("2/3").
        clock: unix time.
    """

    def __init__(
        self, holder: Holder, shard: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._holder = holder
        self._shard = shard
        self._clock = clock
        self._reading: dict[str, asyncio.Task[bytes]] = {}
        self._fresh: dict[str, tuple[float, bytes]] = {}
        self._waiting: set[asyncio.Task[None]] = set()
        self.reads = 0  # agent runs started, for tests and the log
        self.busy = 0  # requests answered "busy"

    def ask(self, node: str, respond: Respond) -> None:
        """Answer ``node``'s processes through ``respond``, from a task of its own."""
        task = asyncio.create_task(self._answer(node, respond, len(self._waiting) >= MAX_WAITING))
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)

    async def answer(self, node: str) -> bytes:
        """The reply for ``node``: fresh, shared with a read under way, or read now."""
        now = self._clock()
        fresh = self._fresh.get(node)
        if fresh is not None and now - fresh[0] < FRESH_S:
            return fresh[1]
        reading = self._reading.get(node)
        if reading is None:
            reader = self._holder(node)
            if reader is None:
                reason = f"{node} is not collected by shard {self._shard}"
                return encode_failure(node, reason, now, refused=True)
            if len(self._reading) >= MAX_READS_AT_ONCE:
                self.busy += 1
                return self._busy(node)
            reading = asyncio.create_task(self._read(reader, node))
            self._reading[node] = reading
        return await asyncio.shield(reading)  # one asker gone does not cancel the read

    async def stop(self) -> None:
        """Cancel what is under way."""
        tasks = [*self._waiting, *self._reading.values()]
        await cancel_all(tasks, 1.0)  # a dropped cancel is sent again
        await asyncio.gather(*tasks, return_exceptions=True)  # their errors, read

    async def _answer(self, node: str, respond: Respond, busy: bool) -> None:
        if busy:
            self.busy += 1
            await respond(self._busy(node))
        else:
            await respond(await self.answer(node))

    async def _read(self, reader: ProcessReader, node: str) -> bytes:
        self.reads += 1
        try:
            listing = await reader.processes(node)
        except UnknownNode as exc:  # handed back between the lookup and the read
            return encode_failure(node, str(exc), self._clock(), refused=True)
        finally:
            del self._reading[node]
        reply = encode_listing(listing)
        self._prune()
        self._fresh[node] = (self._clock(), reply)
        return reply

    def _prune(self) -> None:
        now = self._clock()
        for name, (at, _) in tuple(self._fresh.items()):
            if now - at >= FRESH_S:
                del self._fresh[name]

    def _busy(self, node: str) -> bytes:
        reason = f"shard {self._shard} is busy reading other nodes' processes; asked again soon"
        return encode_failure(node, reason, self._clock())
