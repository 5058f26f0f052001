"""Every ``gpufleet_*`` metric: its family and where its value comes from (docs/metrics.md).

These tables (and :mod:`exporter.gpu_catalog`) are the single definition both
exposition paths read. Base labels: a port or NIC is ``node, port, kind``, a node
is ``node``, the SLA is ``month``; GPUs are described in ``gpu_catalog``.
"""

from __future__ import annotations

from collectors.updates import NODE_STATUSES
from exporter.families import (
    Column,
    Derived,
    EntityKind,
    Family,
    Keyed,
    Labelled,
    OneHot,
    counter,
    gauge,
)
from exporter.gpu_catalog import GPU, GPU_XID, LINK_EVENTS
from fleet.model import VERDICTS, FleetSnapshot, NodeSnapshot, PortSnapshot, SlaSummary

__all__ = [
    "FAMILIES",
    "FLEET",
    "GPU",
    "GPU_XID",
    "LINK_EVENTS",
    "NODE",
    "PORT",
    "SCRAPE_DURATION",
    "SLA",
    "families",
    "port_kind",
]

PORT_LABELS = ("node", "port", "kind")
NODE_LABELS = ("node",)
SLA_LABELS = ("month",)
NODE_STATES = ("up", "broken", "unreachable")
GBITS_TO_BYTES = 1e9 / 8  # snapshots carry link rates in Gb/s; Prometheus' base unit is bytes


def _port_active(port: PortSnapshot) -> bool | None:
    return None if port.state is None else port.state.upper() in ("ACTIVE", "UP")


PortInfo = tuple[tuple[tuple[str, ...], int], ...]
# One shared value per (state, phys_state): every port's own nested tuples were ~9 a node
# that the cyclic collector kept tracked until a full collection (three levels deep, they
# outlive the young collections that untrack a tuple of strings). Bounded, as node data
# may be anything.
_PORT_INFOS: dict[tuple[str, str], PortInfo] = {}
_PORT_INFOS_MAX = 256


def _port_info(port: PortSnapshot) -> PortInfo:
    if port.state is None:
        return ()
    key = (port.state, port.phys_state or "")
    info = _PORT_INFOS.get(key)
    if info is None:
        if len(_PORT_INFOS) >= _PORT_INFOS_MAX:
            _PORT_INFOS.clear()
        info = _PORT_INFOS[key] = ((key, 1),)
    return info


P = PORT_LABELS
PORT_ACTIVE = gauge("gpufleet_port_active", "1 when the port state is ACTIVE (a NIC: up).", P)
PORT_INFO = gauge(
    "gpufleet_port_info",
    "The port's state strings as labels; value 1.",
    (*P, "state", "phys_state"),
)
PORT_RATE = gauge("gpufleet_port_rate_bytes_per_second", "Link rate (signalling rate / 8).", P)
PORT_EXPECTED = gauge(
    "gpufleet_port_expected_rate_bytes_per_second", "Link rate the configuration expects.", P
)
PORT_DOWNED = counter(
    "gpufleet_port_link_downed_total", "Times the link went down (as the port counts).", P
)
PORT_ERRORS = gauge(
    "gpufleet_port_errors_per_second", "Port error rate by kind of error.", (*P, "error")
)
PORT_RX = gauge("gpufleet_port_receive_bytes_per_second", "Bytes received per second.", P)
PORT_TX = gauge("gpufleet_port_transmit_bytes_per_second", "Bytes sent per second.", P)
PORT_COUNTER = gauge(
    "gpufleet_port_raw_value",
    "Raw cumulative port counter as the node reports it (IB counters clamp at their width).",
    (*P, "counter"),
)
PORT_VERDICT = gauge("gpufleet_port_verdict", "Port health verdict, one-hot.", (*P, "verdict"))

PORT = EntityKind(
    PORT_LABELS,
    (
        Column(PORT_RATE, "rate_gbps", scale=GBITS_TO_BYTES),
        Column(PORT_EXPECTED, "expected_rate_gbps", scale=GBITS_TO_BYTES),
        Column(PORT_DOWNED, "link_downed"),
        Column(PORT_ERRORS, "symbol_error_rate", ("symbol",)),
        Column(PORT_ERRORS, "rcv_error_rate", ("receive",)),
        Column(PORT_ERRORS, "xmit_discard_rate", ("transmit_discard",)),
        Column(PORT_RX, "rx_bytes_per_s"),
        Column(PORT_TX, "tx_bytes_per_s"),
        Derived(PORT_ACTIVE, _port_active),
        Labelled(PORT_INFO, _port_info),
        Keyed(PORT_COUNTER, "counters"),
        OneHot(PORT_VERDICT, "verdict", VERDICTS),
    ),
)


def _node_info(node: NodeSnapshot) -> tuple[tuple[tuple[str, ...], int], ...]:
    fields = (node.model, node.driver, node.cuda, node.agent_version)
    return ((tuple(f or "" for f in fields), 1),)


N = NODE_LABELS
NODE_UP = gauge("gpufleet_node_up", "1 while the node's agent streams samples.", N)
NODE_BROKEN = gauge("gpufleet_node_broken", "1 when the node counts as down (broken or lost).", N)
NODE_STATE = gauge("gpufleet_node_state", "Node health state, one-hot.", (*N, "state"))
NODE_STATUS = gauge("gpufleet_node_status", "Node connection status, one-hot.", (*N, "status"))
NODE_EXPECTED = gauge("gpufleet_node_gpus_expected", "GPUs the node should have.", N)
NODE_VISIBLE = gauge("gpufleet_node_gpus_visible", "GPUs the node's agent reports.", N)
NODE_HEALTHY = gauge("gpufleet_node_gpus_healthy", "GPUs whose verdict is ok or warn.", N)
NODE_SEEN = gauge(
    "gpufleet_node_last_seen_timestamp_seconds", "When the node last sent anything.", N
)
NODE_INFO = gauge(
    "gpufleet_node_info",
    "Node software and GPU model as labels; value 1.",
    (*N, "model", "driver", "cuda", "agent_version"),
)

NODE = EntityKind(
    NODE_LABELS,
    (
        Column(NODE_BROKEN, "broken", flag=True),
        Column(NODE_EXPECTED, "expected_gpus"),
        Column(NODE_HEALTHY, "healthy_gpus"),
        Column(NODE_SEEN, "last_seen"),
        Derived(NODE_UP, lambda node: node.status == "streaming"),
        Derived(NODE_VISIBLE, lambda node: node.gpu_count),
        OneHot(NODE_STATE, "state", NODE_STATES),
        OneHot(NODE_STATUS, "status", NODE_STATUSES),
        Labelled(NODE_INFO, _node_info),
    ),
)


def _utilization(snapshot: FleetSnapshot) -> tuple[tuple[tuple[str, ...], float | None], ...]:
    u = snapshot.utilization
    return ((("now",), u.now), (("1h",), u.avg_1h), (("24h",), u.avg_24h))


FLEET_NODES = gauge("gpufleet_fleet_nodes", "Nodes in the fleet.", ())
FLEET_STREAMING = gauge("gpufleet_fleet_nodes_streaming", "Nodes streaming samples.", ())
FLEET_BROKEN = gauge("gpufleet_fleet_nodes_broken", "Nodes broken or unreachable.", ())
FLEET_GPUS = gauge("gpufleet_fleet_gpus", "GPUs expected or seen in the fleet.", ())
FLEET_HEALTHY = gauge("gpufleet_fleet_gpus_healthy", "GPUs whose verdict is ok or warn.", ())
FLEET_UTIL = gauge(
    "gpufleet_fleet_utilization_percent", "Fleet utilization now and averaged.", ("window",)
)
FLEET_TAKEN = gauge("gpufleet_snapshot_timestamp_seconds", "When the snapshot was taken.", ())

FLEET = EntityKind(
    (),
    (
        Column(FLEET_STREAMING, "nodes_streaming"),
        Column(FLEET_BROKEN, "nodes_broken"),
        Column(FLEET_GPUS, "gpus_total"),
        Column(FLEET_HEALTHY, "gpus_healthy"),
        Column(FLEET_TAKEN, "taken_at"),
        Derived(FLEET_NODES, lambda snapshot: len(snapshot.nodes)),
        Labelled(FLEET_UTIL, _utilization),
    ),
)


def _credit(sla: SlaSummary) -> tuple[tuple[tuple[str, ...], float], ...]:
    return (((sla.currency, sla.credit_model), sla.credit_owed),)


S = SLA_LABELS
SLA_AVAILABILITY = gauge(
    "gpufleet_sla_availability_percent", "Month-to-date availability of the contract.", S
)
SLA_OBJECTIVE = gauge("gpufleet_sla_objective_percent", "Availability the contract promises.", S)
SLA_COVERAGE = gauge("gpufleet_sla_coverage_percent", "Share of the month monitored.", S)
SLA_DOWN = gauge("gpufleet_sla_down_node_seconds", "Node-seconds counted down this month.", S)
SLA_TIER = gauge("gpufleet_sla_credit_tier_percent", "Credit tier reached, percent.", S)
# A tier's credit is a share of the whole month's bill: before the month ends it is a
# projection, not money owed yet (the SLA panel words it the same way).
SLA_CREDIT = gauge(
    "gpufleet_sla_credit_owed",
    "Credit under credit_model, in currency: tiered, what the month would earn at month end"
    " if availability stays where it is; pro_rata, owed so far this month.",
    (*S, "currency", "credit_model"),
)

SLA = EntityKind(
    SLA_LABELS,
    (
        Column(SLA_AVAILABILITY, "availability_pct"),
        Column(SLA_OBJECTIVE, "slo_pct"),
        Column(SLA_COVERAGE, "coverage_pct"),
        Column(SLA_DOWN, "down_node_hours", scale=3600.0),
        Column(SLA_TIER, "tier_credit_pct"),
        Labelled(SLA_CREDIT, _credit),
    ),
)

SCRAPE_DURATION = gauge(
    "gpufleet_scrape_duration_seconds", "How long the previous scrape took to build.", ()
)


def _families() -> tuple[Family, ...]:
    seen: dict[Family, None] = {}
    for kind in (GPU, PORT, NODE, FLEET, SLA):
        for spec in kind.specs:
            seen.setdefault(spec.family, None)
    seen[GPU_XID] = None
    seen[LINK_EVENTS] = None
    seen[SCRAPE_DURATION] = None
    return tuple(seen)


FAMILIES: tuple[Family, ...] = _families()
"""Every family in exposition order; both paths emit all of them, with or without samples."""

PORT_WITHOUT_RAW = EntityKind(
    PORT_LABELS, tuple(s for s in PORT.specs if s.family is not PORT_COUNTER)
)


def port_kind(raw_port_counters: bool) -> EntityKind:
    """The port families, with ``gpufleet_port_raw_value`` only when asked for.

    The raw counters were 40 % of the series of /metrics (16 nodes: 4,512 of 11,172),
    every one a number the per-second gauges already turn into what a query wants;
    ``[metrics] raw_port_counters`` brings them back.
    """
    return PORT if raw_port_counters else PORT_WITHOUT_RAW


def families(raw_port_counters: bool) -> tuple[Family, ...]:
    """The families an exposition has: :data:`FAMILIES`, less the raw counters unless asked."""
    if raw_port_counters:
        return FAMILIES
    return tuple(f for f in FAMILIES if f is not PORT_COUNTER)
