"""What shards put on NATS: compact msgspec structs, their subjects, and the conversions.

A shard publishes one :class:`ShardSummary` per tick (core NATS: the newest one is all
a viewer needs) and one :class:`ShardEvents` batch per tick with something in it
(JetStream: durable and replayable). Structs are encoded as MessagePack arrays
(``array_like``): field names are not repeated for every node of every tick.
Everything decoded from the bus is checked against these types: a malformed message
is dropped, never half applied (msgspec checks every field, literals included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from collectors.agent.fields import GPU_FIELDS
from collectors.updates import NodeStatus
from fleet.model import (
    EventRecord,
    GpuColumns,
    GpuSnapshot,
    NodeSnapshot,
    NodeState,
    NodeTransition,
    PortSnapshot,
    Verdict,
)

SUBJECT_ROOT = "gpufleet"
_UTIL = GPU_FIELDS.index("util_gpu")
STREAM = "GPUFLEET_EVENTS"


def summary_subject(shard: int) -> str:
    """Core NATS subject of shard ``shard``'s per-tick summaries."""
    return f"{SUBJECT_ROOT}.summary.{shard}"


def events_subject(shard: int) -> str:
    """JetStream subject of shard ``shard``'s transitions, events and probe results."""
    return f"{SUBJECT_ROOT}.events.{shard}"


def request_subject(shard: int, what: str) -> str:
    """Request/reply subject served by shard ``shard`` (``detail``, ``series``, ``probe``).

    Node names are in the payload, not the subject: an IP literal's dots would split it.
    """
    return f"{SUBJECT_ROOT}.shard.{shard}.{what}"


# About 150-600 B per node (more with many reasons): 500 nodes stay far below 1 MiB.
NODES_PER_MESSAGE = 500
SUMMARY_WILDCARD = f"{SUBJECT_ROOT}.summary.*"
EVENTS_WILDCARD = f"{SUBJECT_ROOT}.events.>"


class GpuSummary(msgspec.Struct, array_like=True, frozen=True):
    """One GPU in a tick summary: utilization and verdict with its reasons."""

    index: int
    util: float | None
    verdict: Verdict
    reasons: tuple[str, ...] = ()


class PortSummary(msgspec.Struct, array_like=True, frozen=True):
    """One port in a tick summary: its verdict with reasons."""

    name: str
    kind: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()


class NodeSummary(msgspec.Struct, array_like=True, frozen=True):
    """One node in a tick summary: what the fleet grid and the header need."""

    name: str
    status: NodeStatus
    status_reason: str
    state: NodeState
    broken_reasons: tuple[str, ...]
    state_since: float | None
    last_seen: float | None
    expected_gpus: int
    model: str | None
    gpus: tuple[GpuSummary, ...]
    ports: tuple[PortSummary, ...]


class ShardSummary(msgspec.Struct, array_like=True, frozen=True):
    """Part ``part`` of ``parts`` of one shard's nodes at ``taken_at``; ``seq`` counts the
    shard's ticks since it started."""

    shard: int
    count: int
    seq: int
    taken_at: float
    interval: float
    nodes: tuple[NodeSummary, ...]
    part: int = 0
    parts: int = 1


class GpuVerdictChange(msgspec.Struct, array_like=True, frozen=True):
    """GPU ``gpu`` of ``node`` went from ``before`` to ``after`` at ``at``."""

    node: str
    gpu: int
    before: Verdict
    after: Verdict
    at: float
    reasons: tuple[str, ...] = ()


class ProbeOutcome(msgspec.Struct, array_like=True, frozen=True):
    """A probe run's result as the fleet log keeps it: per-GPU probe verdicts."""

    node: str
    at: float
    status: str
    verdicts: tuple[tuple[int, str], ...] = ()


class ShardEvents(msgspec.Struct, array_like=True, frozen=True):
    """What happened on one shard during one tick (published only when non-empty)."""

    shard: int
    taken_at: float
    transitions: tuple[NodeTransition, ...] = ()
    events: tuple[EventRecord, ...] = ()
    gpu_changes: tuple[GpuVerdictChange, ...] = ()
    probes: tuple[ProbeOutcome, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.transitions or self.events or self.gpu_changes or self.probes)


_ENCODER = msgspec.msgpack.Encoder()
_SUMMARY = msgspec.msgpack.Decoder(ShardSummary)
_EVENTS = msgspec.msgpack.Decoder(ShardEvents)
_NODE = msgspec.msgpack.Decoder(NodeSnapshot)


def encode(value: Any) -> bytes:
    """MessagePack bytes of a struct or a snapshot dataclass."""
    return _ENCODER.encode(value)


def decode_summary(data: bytes) -> ShardSummary:
    """A summary from the bus. Raises msgspec.DecodeError/ValidationError when malformed."""
    return _SUMMARY.decode(data)


def decode_events(data: bytes) -> ShardEvents:
    """An event batch from the bus. Raises msgspec errors when malformed."""
    return _EVENTS.decode(data)


def decode_node(data: bytes) -> NodeSnapshot:
    """A node detail reply. Raises msgspec errors when malformed."""
    return _NODE.decode(data)


def summarize_node(node: NodeSnapshot, columns: GpuColumns | None = None) -> NodeSummary:
    """The compact form of ``node`` for the per-tick summary.

    With the tick's ``columns`` the GPUs' utilization comes from them and verdicts from
    the briefs, so a shard's every-tick summary builds no GPU or port object.
    """
    return NodeSummary(
        node.name,
        node.status,
        node.status_reason,
        node.state,
        node.broken_reasons,
        node.state_since,
        node.last_seen,
        node.expected_gpus,
        node.model,
        _gpu_summaries(node, columns),
        tuple(PortSummary(p.name, p.kind, p.verdict, p.reasons) for p in node.port_briefs),
    )


def _gpu_summaries(node: NodeSnapshot, columns: GpuColumns | None) -> tuple[GpuSummary, ...]:
    briefs = node.gpu_briefs
    rows = node.rows
    if columns is None or rows is None or node.gpu_count != len(briefs):
        return tuple(GpuSummary(g.index, g.util_gpu, g.verdict, g.reasons) for g in node.gpus)
    utils = columns.fast[rows.gpu_start : rows.gpu_start + len(briefs), _UTIL].tolist()
    return tuple(
        GpuSummary(b.index, _reading(u), b.verdict, b.reasons)
        for b, u in zip(briefs, utils, strict=True)
    )


def _reading(value: float) -> float | None:
    # NaN is no reading; a whole percentage goes out as the agent sent it ("60", not
    # "60.0"): the columns are float64, and two bytes per GPU are a quarter of a summary.
    if value != value:
        return None
    return int(value) if value.is_integer() else value


def summarize(
    shard: int,
    count: int,
    seq: int,
    interval: float,
    nodes: Sequence[NodeSnapshot],
    at: float,
    columns: GpuColumns | None = None,
) -> list[bytes]:
    """Encoded :class:`ShardSummary` parts of ``nodes`` taken at ``at``.

    A part holds at most ``NODES_PER_MESSAGE`` nodes: NATS refuses messages above its
    ``max_payload`` (1 MiB by default), which one summary of a 5,000-node shard exceeds.
    """
    compact = tuple(summarize_node(node, columns) for node in nodes)
    parts = max(1, -(-len(compact) // NODES_PER_MESSAGE))
    return [
        encode(
            ShardSummary(
                shard,
                count,
                seq,
                at,
                interval,
                compact[i * NODES_PER_MESSAGE : (i + 1) * NODES_PER_MESSAGE],
                i,
                parts,
            )
        )
        for i in range(parts)
    ]


def node_from_summary(summary: NodeSummary) -> NodeSnapshot:
    """A NodeSnapshot holding what the summary carries (the rest stays N/A)."""
    return NodeSnapshot(
        name=summary.name,
        status=summary.status,
        status_reason=summary.status_reason,
        last_seen=summary.last_seen,
        state=summary.state,
        broken_reasons=summary.broken_reasons,
        state_since=summary.state_since,
        expected_gpus=summary.expected_gpus,
        model=summary.model,
        gpus=tuple(
            GpuSnapshot(
                g.index,
                uuid="",
                name=summary.model or "",
                util_gpu=g.util,
                verdict=g.verdict,
                reasons=g.reasons,
            )
            for g in summary.gpus
        ),
        ports=tuple(
            PortSnapshot(p.name, p.kind, verdict=p.verdict, reasons=p.reasons)
            for p in summary.ports
        ),
    )
