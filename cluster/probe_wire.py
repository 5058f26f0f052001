"""Probes through NATS: the request, its progress events on the asker's inbox, the reply.

A viewer that wants progress names an inbox in the request; the owning shard runs the
probe with the same runner a local fleet uses and publishes every progress,
measurement and failure event there, in order, before it answers with the report.
Events are checked on decoding like everything from the bus, bounded in size and
number, their text made safe for a terminal, and an event about another node than the
one asked is dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
import nats.errors
from nats.aio.msg import Msg

from collectors.sanitize import clean_text
from probes.report import (
    ProbeEvent,
    ProbeFailure,
    ProbeMeasurement,
    ProbeProgress,
    ProbeReport,
    Suite,
)

log = logging.getLogger(__name__)
EVENTS_GRACE_S = 5.0  # how long a viewer waits for events the reply says were sent
# A run sends a progress and a measurement per probe and GPU (a few dozen): these bound
# what a flood or a huge message on the inbox can cost the viewer.
MAX_EVENT_BYTES = 16_384
MAX_EVENTS = 4_096  # per run; more are dropped and counted
TEXT_LIMIT = 500  # characters of one message, detail or reason
MAX_REASONS = 16


# Progress goes to a reply inbox only: never onto a subject other viewers read.
Inbox = Annotated[str, msgspec.Meta(pattern=r"^_INBOX\.[A-Za-z0-9_.-]{1,200}$")]
OperatorName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.@+ -]{0,120}$")]


class ProbeRequest(msgspec.Struct, array_like=True, frozen=True):
    """A probe run asked of the owning shard; ``progress``: where to send its events;
    ``operator``: who asked (user@host and NATS user), for the shard's log."""

    node: str
    suite: Suite = "quick"
    progress: Inbox | None = None
    operator: OperatorName = ""


class ProbeReply(msgspec.Struct, frozen=True):
    """The report, or why there is none; ``events``: how many were sent to the inbox."""

    report: ProbeReport | None = None
    error: str | None = None
    events: int = 0


class ProbeCancel(msgspec.Struct, array_like=True, frozen=True):
    """Cancel the run on ``node`` (the operator pressed escape in a viewer)."""

    node: str


class ProbeEventMessage(msgspec.Struct, array_like=True, frozen=True):
    """One probe event; exactly one field is set (msgspec unions hold one dataclass)."""

    progress: ProbeProgress | None = None
    measurement: ProbeMeasurement | None = None
    failure: ProbeFailure | None = None

    def event(self) -> ProbeEvent | None:
        """The event carried, or None when the message carries none."""
        return self.progress or self.measurement or self.failure


_EVENT = msgspec.msgpack.Decoder(ProbeEventMessage)
_ENCODE = msgspec.msgpack.Encoder()


def encode_probe_event(event: ProbeEvent) -> bytes:
    """``event`` as its bus message."""
    if isinstance(event, ProbeProgress):
        return _ENCODE.encode(ProbeEventMessage(progress=event))
    if isinstance(event, ProbeMeasurement):
        return _ENCODE.encode(ProbeEventMessage(measurement=event))
    return _ENCODE.encode(ProbeEventMessage(failure=event))


def decode_probe_event(data: bytes, node: str) -> ProbeEvent | None:
    """The event in ``data`` when it is well formed, small and about ``node``, else None;
    its text made safe for a terminal (anyone allowed on the inbox could write it)."""
    if len(data) > MAX_EVENT_BYTES:
        return None
    try:
        event = _EVENT.decode(data).event()
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return _cleaned(event) if event is not None and event.node == node else None


def _cleaned(event: ProbeEvent) -> ProbeEvent:
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        clean: str | tuple[str, ...]
        if isinstance(value, str):
            clean = clean_text(value, TEXT_LIMIT)
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            clean = tuple(clean_text(v, TEXT_LIMIT) for v in value[:MAX_REASONS])
        else:
            continue
        if clean != value:
            changes[f.name] = clean
    return dataclasses.replace(event, **changes) if changes else event


Publish = Callable[[str, bytes], Awaitable[None]]


class ProgressForwarder:
    """The shard's side: queues a run's events (the runner calls back synchronously) and
    publishes them in order to the asker's inbox.

    Args:
        publish: sends one message (``Client.publish``).
        subject: the asker's inbox.
    """

    def __init__(self, publish: Publish, subject: str) -> None:
        self._publish = publish
        self._subject = subject
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._forward(), name=f"probe-progress {subject}")
        self.sent = 0

    def __call__(self, event: ProbeEvent) -> None:
        self._queue.put_nowait(encode_probe_event(event))

    async def _forward(self) -> None:
        while (data := await self._queue.get()) is not None:
            try:
                await self._publish(self._subject, data)
            except (nats.errors.Error, OSError) as exc:  # the report still goes out
                log.info("probe progress to %s not sent: %s", self._subject, exc)
                continue
            self.sent += 1

    async def close(self) -> None:
        """Send what is queued, then stop (before the reply, so events come first)."""
        self._queue.put_nowait(None)
        await self._task


class ProgressInbox:
    """The viewer's side: hands each event about ``node`` to ``listener`` as it comes.

    Args:
        node: the node probed (events about others are dropped).
        listener: the dashboard's progress callback.
    """

    def __init__(self, node: str, listener: Callable[[ProbeEvent], None]) -> None:
        self.node = node
        self._listener = listener
        self._arrived = asyncio.Condition()
        self.received = 0
        self.dropped = 0  # malformed, or about another node

    async def on_message(self, msg: Msg) -> None:
        """The inbox subscription's callback."""
        event = None if self.received >= MAX_EVENTS else decode_probe_event(msg.data, self.node)
        if event is None:
            self.dropped += 1
        else:
            try:
                self._listener(event)
            except Exception:  # a broken view must not lose the report
                log.exception("probe progress listener failed")
        async with self._arrived:
            self.received += 1
            self._arrived.notify_all()

    async def wait_for(self, count: int, within_s: float = EVENTS_GRACE_S) -> bool:
        """Wait until ``count`` events arrived (the reply says how many were sent)."""
        try:
            async with asyncio.timeout(within_s), self._arrived:
                await self._arrived.wait_for(lambda: self.received >= count)
        except TimeoutError:
            return False
        return True
