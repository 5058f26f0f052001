"""Probes from an attached view: run by the owning shard, progress and report over NATS.

The shard runs the probe with the runner a local fleet uses (``gpufleet.probing``); this
side names an inbox for the progress events, waits for the report, and then for every
event the report says was sent, so the dashboard's probe screen shows the same
sequence it shows for a local fleet.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import re
import socket
from collections.abc import Callable

import msgspec
from nats.aio.client import Client

from cluster.probe_wire import ProbeCancel, ProbeReply, ProbeRequest, ProgressInbox
from cluster.wire import encode, request_subject
from fleet.facade import ProbeListener, ProbeReport, Suite

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 900.0
_REPLY = msgspec.msgpack.Decoder(ProbeReply)


def operator_identity(nats_user: str | None) -> str:
    """``user@host`` of this process, with the NATS user it logs in as: what a shard
    logs for each probe it is asked to run."""
    who = f"{getpass.getuser()}@{socket.gethostname()}"
    if nats_user:
        who += f" as {nats_user}"
    return re.sub(r"[^A-Za-z0-9_.@+ -]", "?", who)[:120]


class RemoteProbes:
    """Probe runs on the shards that own the nodes.

    Args:
        client: the viewer's NATS connection (None while not attached).
        owner_of: the shard that reports a node (None: not part of the fleet).
        read_only: refuse probes (as ``--read-only``).
    """

    def __init__(
        self,
        client: Callable[[], Client | None],
        owner_of: Callable[[str], int | None],
        read_only: bool,
    ) -> None:
        self._client = client
        self._owner_of = owner_of
        self.read_only = read_only
        self._reports: dict[str, ProbeReport] = {}
        self._cancels: set[asyncio.Task[None]] = set()
        self.dropped = 0  # progress events that were malformed or about another node
        self.operator = operator_identity(None)  # who asks, as the shard logs it

    def _where(self, node: str) -> tuple[Client, int]:
        if self.read_only:
            raise PermissionError("gpufleet runs read-only: probes are disabled")
        nc, shard = self._client(), self._owner_of(node)
        if shard is None or nc is None:
            raise KeyError(f"{node} is not part of the fleet")
        return nc, shard

    async def run(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        """Run ``suite`` on ``node`` by its shard; ``on_progress`` gets every event.

        Raises:
            PermissionError: read-only.
            KeyError: no shard reports ``node``.
            RuntimeError: the shard ran no probe (the error it gave).
        """
        nc, shard = self._where(node)
        inbox = None if on_progress is None else ProgressInbox(node, on_progress)
        sub = None if inbox is None else await nc.subscribe(nc.new_inbox(), cb=inbox.on_message)
        try:
            inbox_subject = None if sub is None else sub.subject
            asked = ProbeRequest(node, suite, inbox_subject, self.operator)
            subject = request_subject(shard, "probe")
            raw = await nc.request(subject, encode(asked), timeout=PROBE_TIMEOUT_S)
            reply = _REPLY.decode(raw.data)
            if inbox is not None and not await inbox.wait_for(reply.events):
                log.info("probe of %s: %d of %d events came", node, inbox.received, reply.events)
        finally:
            if sub is not None:
                await sub.unsubscribe()
            if inbox is not None:
                self.dropped += inbox.dropped
        if reply.report is None:
            raise RuntimeError(reply.error or f"the shard of {node} returned no report")
        self._reports[node] = reply.report
        return reply.report

    def cancel(self, node: str) -> bool:
        """Ask the owning shard to cancel the run (True: asked)."""
        try:
            nc, shard = self._where(node)
        except (PermissionError, KeyError):
            return False
        task = asyncio.create_task(
            nc.publish(request_subject(shard, "cancel"), encode(ProbeCancel(node)))
        )
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)
        return True

    def report(self, node: str) -> ProbeReport | None:
        """The last report of ``node`` this view received."""
        return self._reports.get(node)
