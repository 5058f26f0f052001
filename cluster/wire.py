"""What shards put on NATS: compact msgspec structs, their subjects, and the conversions.

A shard publishes one :class:`ShardSummary` per tick (core NATS: the newest one is all
a viewer needs) and one :class:`ShardEvents` batch per tick with something in it
(JetStream: durable and replayable). Structs are encoded as MessagePack arrays
(``array_like``): field names are not repeated for every node of every tick.
Everything decoded from the bus is checked against these types: a malformed message
is dropped, never half applied (msgspec checks every field, literals included).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import msgspec

from collectors.agent.fields import GPU_FIELDS
from collectors.updates import NodeStatus
from fleet.briefs import GpuBrief, PortAlarms, PortBrief
from fleet.model import (
    EventRecord,
    GpuColumns,
    GpuSnapshot,
    NodeSnapshot,
    NodeState,
    NodeTransition,
    PortSnapshot,
    ProbeVerdict,
    UtilizationSummary,
    Verdict,
)

SUBJECT_ROOT = "gpufleet"
_UTIL, _MEM, _POWER, _TEMP = (
    GPU_FIELDS.index(f) for f in ("util_gpu", "mem_used_mib", "power_w", "temp_c")
)
_MIB = 1 << 20
# Where a GpuSnapshot's fields sit in the state's per-GPU steady values (its field order).
_STEADY_AT = {f.name: i for i, f in enumerate(dataclasses.fields(GpuSnapshot))}
_AT_TOTAL, _AT_LIMIT = _STEADY_AT["memory_total_bytes"], _STEADY_AT["power_limit_w"]
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


# About 1.4 kB per node of 8 GPUs, 8 ports and a NIC (more with many reasons): 250
# nodes stay far below 1 MiB.
NODES_PER_MESSAGE = 250
SUMMARY_WILDCARD = f"{SUBJECT_ROOT}.summary.*"
EVENTS_WILDCARD = f"{SUBJECT_ROOT}.events.>"


class GpuSummary(msgspec.Struct, array_like=True, frozen=True):
    """One GPU in a tick summary: what the fleet grid, the header and the Failed GPUs
    panel show of it (identity, verdict since when, and the readings of the tick)."""

    index: int
    util: float | None
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    uuid: str = ""
    serial: str | None = None
    lost: bool = False
    since: float | None = None
    mem_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    nvlink_active: int | None = None
    nvlink_total: int | None = None
    probe_verdict: ProbeVerdict | None = None


class PortSummary(msgspec.Struct, array_like=True, frozen=True):
    """One port or NIC in a tick summary: its link (state, speed, verdict since when) and
    the error readings its glyph needs; traffic comes with the node's detail."""

    name: str
    kind: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    state: str | None = None
    phys_state: str | None = None
    rate_gbps: float | None = None
    expected_rate_gbps: float | None = None
    link_downed: int | None = None
    since: float | None = None
    link_downed_delta: int = 0
    symbol_error_rate: float | None = None
    rcv_error_rate: float | None = None


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
    nics: tuple[PortSummary, ...] = ()
    driver: str | None = None
    cuda: str | None = None


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
    # The shard's 1-hour and 24-hour utilization (its history's), weighted by its GPUs
    # with a reading when the viewer joins the shards into one figure.
    util_1h: float | None = None
    util_24h: float | None = None


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


@functools.cache
def _node_decoder() -> msgspec.msgpack.Decoder[NodeSnapshot]:
    # Built on first use: a shard never decodes a node, and msgspec reads every field's
    # annotation of the model when the decoder is made.
    return msgspec.msgpack.Decoder(NodeSnapshot)


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
    return _node_decoder().decode(data)


def summarize_node(node: NodeSnapshot, columns: GpuColumns | None = None) -> NodeSummary:
    """The compact form of ``node`` for the per-tick summary.

    With the tick's ``columns`` the GPUs' readings come from them, identity and verdicts
    from the briefs and ports from their briefs and alarms, so a shard's every-tick
    summary builds no GPU or port object.
    """
    alarms = node.port_alarms
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
        tuple(map(_port_summary, node.port_briefs, alarms)),
        tuple(_port_summary(p) for p in node.nic_briefs),
        node.driver,
        node.cuda,
    )


def _port_summary(port: PortBrief, alarms: PortAlarms | None = None) -> PortSummary:
    delta, symbol, rcv = alarms if alarms is not None else (0, None, None)
    return PortSummary(
        port.name,
        port.kind,
        port.verdict,
        port.reasons,
        port.state,
        port.phys_state,
        port.rate_gbps,
        port.expected_rate_gbps,
        port.link_downed,
        port.since,
        delta,
        symbol,
        rcv,
    )


def _gpu_summaries(node: NodeSnapshot, columns: GpuColumns | None) -> tuple[GpuSummary, ...]:
    briefs = node.gpu_briefs
    rows = node.rows
    steady = _steady(node, len(briefs))
    if columns is None or rows is None or steady is None or node.gpu_count != len(briefs):
        return tuple(map(_gpu_object_summary, node.gpus))
    fast = columns.fast[rows.gpu_start : rows.gpu_start + len(briefs)]
    readings = fast[:, (_UTIL, _MEM, _POWER, _TEMP)].tolist()
    return tuple(
        _gpu_summary(b, _reading(u), _bytes(m), _reading(p), _reading(t), total, limit)
        for b, (u, m, p, t), (total, limit) in zip(briefs, readings, steady, strict=True)
    )


def _steady(node: NodeSnapshot, gpus: int) -> list[tuple[int | None, float | None]] | None:
    """Each GPU's memory size and power limit from the state's rows, which keep every
    GPU's identity and slow readings as a list in GpuSnapshot order (worked out once per
    slow sample): building the GPU objects each tick for two steady numbers would cost
    ten times the whole summary. None where the rows do not keep them."""
    steady = getattr(node.rows, "steady", None)
    if steady is None or len(steady) != gpus:
        return None
    out = []
    for gpu in steady:
        values = gpu.values()
        out.append((values[_AT_TOTAL], values[_AT_LIMIT]))
    return out


def _gpu_summary(
    brief: GpuBrief,
    util: float | None,
    mem: int | None,
    power: float | None,
    temp: float | None,
    total: int | None,
    limit: float | None,
) -> GpuSummary:
    return GpuSummary(
        brief.index,
        util,
        brief.verdict,
        brief.reasons,
        brief.uuid,
        brief.serial,
        brief.lost,
        brief.since,
        mem,
        total,
        power,
        limit,
        temp,
        brief.nvlink_active,
        brief.nvlink_total,
        brief.probe_verdict,
    )


def _gpu_object_summary(g: GpuSnapshot) -> GpuSummary:
    def number(value: float | None) -> float | None:
        return None if value is None else _reading(float(value))

    return _gpu_summary(
        GpuBrief.of(g),
        number(g.util_gpu),
        g.mem_used_bytes,
        number(g.power_w),
        number(g.temp_c),
        g.memory_total_bytes,
        g.power_limit_w,
    )


def _bytes(mib: float) -> int | None:
    return None if mib != mib else int(mib * _MIB)


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
    utilization: UtilizationSummary | None = None,
) -> list[bytes]:
    """Encoded :class:`ShardSummary` parts of ``nodes`` taken at ``at`` (with the shard's
    rolling ``utilization`` averages).

    A part holds at most ``NODES_PER_MESSAGE`` nodes: NATS refuses messages above its
    ``max_payload`` (1 MiB by default), which one summary of a 5,000-node shard exceeds.
    """
    compact = tuple(summarize_node(node, columns) for node in nodes)
    hour, day = (None, None) if utilization is None else (utilization.avg_1h, utilization.avg_24h)
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
                hour,
                day,
            )
        )
        for i in range(parts)
    ]


def node_from_summary(summary: NodeSummary, **overrides: Any) -> NodeSnapshot:
    """A NodeSnapshot holding what the summary carries (the rest stays N/A);
    ``overrides`` are fields set instead (the viewer's rows and PENDING parts)."""
    fields: dict[str, Any] = {
        "name": summary.name,
        "status": summary.status,
        "status_reason": summary.status_reason,
        "last_seen": summary.last_seen,
        "state": summary.state,
        "broken_reasons": summary.broken_reasons,
        "state_since": summary.state_since,
        "expected_gpus": summary.expected_gpus,
        "model": summary.model,
        "driver": summary.driver,
        "cuda": summary.cuda,
        **overrides,
    }
    if "gpus" not in fields:
        fields["gpus"] = tuple(gpu_from_summary(g, summary.model) for g in summary.gpus)
    if "ports" not in fields:
        fields["ports"] = tuple(map(port_from_summary, summary.ports))
    if "nics" not in fields:
        fields["nics"] = tuple(map(port_from_summary, summary.nics))
    return NodeSnapshot(**fields)


def gpu_from_summary(g: GpuSummary, model: str | None) -> GpuSnapshot:
    """The GpuSnapshot a summary's GPU carries (``model``: the node's GPU model)."""
    return GpuSnapshot(
        g.index,
        uuid=g.uuid,
        name=model or "",
        serial=g.serial,
        memory_total_bytes=g.memory_total_bytes,
        lost=g.lost,
        util_gpu=g.util,
        mem_used_bytes=g.mem_used_bytes,
        power_w=g.power_w,
        power_limit_w=g.power_limit_w,
        temp_c=g.temp_c,
        nvlink_active=g.nvlink_active,
        nvlink_total=g.nvlink_total,
        verdict=g.verdict,
        reasons=g.reasons,
        since=g.since,
        probe_verdict=g.probe_verdict,
    )


def port_from_summary(p: PortSummary) -> PortSnapshot:
    """The PortSnapshot a summary's port or NIC carries."""
    return PortSnapshot(
        p.name,
        p.kind,
        state=p.state,
        phys_state=p.phys_state,
        rate_gbps=p.rate_gbps,
        expected_rate_gbps=p.expected_rate_gbps,
        link_downed=p.link_downed,
        link_downed_delta=p.link_downed_delta,
        symbol_error_rate=p.symbol_error_rate,
        rcv_error_rate=p.rcv_error_rate,
        verdict=p.verdict,
        reasons=p.reasons,
        since=p.since,
    )
