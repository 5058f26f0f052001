"""What the SSH transport hands to whoever consumes a fleet: typed node updates.

No UI and no domain imports: the consumer is a plain callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import msgspec

from collectors.protocol import Message

NodeStatus = Literal[
    "connecting",
    "streaming",
    # Connected, but samples stopped for [health] stale_intervals: said by the liveness
    # rule (fleet.health.liveness), never by the transport, which reports facts only.
    "stale",
    "unreachable",
    "auth-failed",
    "host-key-mismatch",
    "agent-error",
    "protocol-error",
    # Shown by a dashboard attached to shards (cluster) when the node's shard went
    # silent: nobody watches the node. Never a shard's own status, so not in NODE_STATUSES.
    "unmonitored",
]

CONNECTED_STATUSES: frozenset[NodeStatus] = frozenset(("streaming", "stale"))
"""Statuses of a node whose SSH connection is up (stale: up, but no recent sample)."""

# The statuses one controller shows for its nodes: the transport's, and ``stale``.
NODE_STATUSES: tuple[NodeStatus, ...] = (
    "connecting",
    "streaming",
    "stale",
    "unreachable",
    "auth-failed",
    "host-key-mismatch",
    "agent-error",
    "protocol-error",
)


@dataclass(frozen=True, slots=True)
class NodeStatusChange:
    """A node's connection status changed (with the reason, in words)."""

    node: str
    status: NodeStatus
    reason: str
    at: float
    # A connection attempt that failed: sent for every attempt, even when the status and
    # reason repeat, so the SLA evidence can list each one with its time and error.
    attempt_failed: bool = False


class NodeMessage(msgspec.Struct, frozen=True, gc=False):
    """One decoded protocol message from a node's agent.

    One is built per node message (~1,000 a second): a frozen dataclass's ``__init__``
    (``object.__setattr__`` per field) cost ~0.6 µs of it, a struct's ~0.07 µs. Not
    tracked by the garbage collector (``gc=False``): it only refers to a name, a
    message and a float, never to anything that refers back to it, so it cannot be part
    of a cycle, and untracked it does not count towards the next collection.
    """

    node: str
    message: Message
    received: float


NodeUpdate = NodeStatusChange | NodeMessage
UpdateSink = Callable[[NodeUpdate], None]
