"""Every ``gpufleet_*`` metric: its family and where its value comes from (docs/metrics.md).

The tables below are the single definition both exposition paths read. Base labels:
a GPU is ``node, gpu, uuid, model`` (``model`` is the GPU's own product name), a
port or NIC is ``node, port, kind``, a node is ``node``, the SLA is ``month``.
"""

from __future__ import annotations

from collectors.updates import NODE_STATUSES
from fleet.metrics.families import (
    Column,
    Derived,
    EntityKind,
    Family,
    Flags,
    Labelled,
    OneHot,
)
from fleet.model import VERDICTS, FleetSnapshot, NodeSnapshot, PortSnapshot, SlaSummary

GPU_LABELS = ("node", "gpu", "uuid", "model")
PORT_LABELS = ("node", "port", "kind")
NODE_LABELS = ("node",)
SLA_LABELS = ("month",)
NODE_STATES = ("up", "broken", "unreachable")
PROBE_VERDICTS = ("pass", "slow", "straggler", "fail")

# NVML clock-event reasons (nvmlClocksEventReason*), named as nvidia-smi -q names them.
CLOCK_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)


def _gauge(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    return Family(name, help_, "gauge", labels)


def _counter(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    return Family(name, help_, "counter", labels)


G = GPU_LABELS
GPU_UTIL = _gauge("gpufleet_gpu_utilization_percent", "Percent of time a kernel ran.", G)
GPU_MEM_UTIL = _gauge(
    "gpufleet_gpu_memory_utilization_percent", "Percent of time memory was read or written.", G
)
GPU_SM_ACTIVE = _gauge("gpufleet_gpu_sm_active_percent", "Percent of SMs busy (GPM).", G)
GPU_TENSOR = _gauge("gpufleet_gpu_tensor_active_percent", "Percent tensor pipes busy (GPM).", G)
GPU_MEM_USED = _gauge("gpufleet_gpu_memory_used_bytes", "Frame buffer memory used.", G)
GPU_MEM_TOTAL = _gauge("gpufleet_gpu_memory_total_bytes", "Frame buffer memory in total.", G)
GPU_POWER = _gauge("gpufleet_gpu_power_watts", "Power draw.", G)
GPU_POWER_LIMIT = _gauge("gpufleet_gpu_power_limit_watts", "Enforced power limit.", G)
GPU_TEMP = _gauge("gpufleet_gpu_temperature_celsius", "GPU temperature.", G)
GPU_SM_CLOCK = _gauge("gpufleet_gpu_sm_clock_hertz", "SM clock.", G)
GPU_PSTATE = _gauge("gpufleet_gpu_performance_state", "Performance state (0 fastest, 15).", G)
GPU_REASONS = _gauge(
    "gpufleet_gpu_clock_event_reasons", "Clock-event (throttle) reasons as the NVML bitmask.", G
)
GPU_REASON = _gauge(
    "gpufleet_gpu_clock_event_reason_active",
    "1 for each clock-event reason now active; absent when inactive.",
    (*G, "reason"),
)
GPU_ECC = _counter(
    "gpufleet_gpu_ecc_errors_total",
    "ECC errors; scope volatile counts since driver load, aggregate over the device's life.",
    (*G, "error", "scope"),
)
GPU_RETIRED = _gauge("gpufleet_gpu_retired_pages", "Retired memory pages by cause.", (*G, "cause"))
GPU_RETIRED_PENDING = _gauge(
    "gpufleet_gpu_retired_pages_pending", "1 when a page retirement waits for a reboot.", G
)
GPU_REMAPPED = _gauge("gpufleet_gpu_remapped_rows", "Remapped memory rows by cause.", (*G, "cause"))
GPU_REMAP_PENDING = _gauge(
    "gpufleet_gpu_row_remap_pending", "1 when a row remap waits for a GPU reset.", G
)
GPU_REMAP_FAILURE = _gauge("gpufleet_gpu_row_remap_failure", "1 when a row remap failed.", G)
GPU_PCIE_REPLAY = _counter("gpufleet_gpu_pcie_replay_total", "PCIe replays.", G)
GPU_NVLINK_ACTIVE = _gauge("gpufleet_gpu_nvlink_links_active", "NVLink links enabled.", G)
GPU_NVLINK_TOTAL = _gauge("gpufleet_gpu_nvlink_links", "NVLink links the GPU has.", G)
GPU_NVLINK_CRC = _gauge(
    "gpufleet_gpu_nvlink_crc_errors_per_second", "NVLink CRC errors per second, all links.", G
)
GPU_LOST = _gauge("gpufleet_gpu_lost", "1 when the GPU fell off the bus (NVML GpuIsLost).", G)
GPU_VERDICT = _gauge(
    "gpufleet_gpu_verdict",
    "GPU health verdict, one-hot: 1 for the current verdict, 0 for the others.",
    (*G, "verdict"),
)
GPU_PROBE = _gauge(
    "gpufleet_gpu_probe_verdict",
    "Latest probe verdict, one-hot; absent for a GPU never probed.",
    (*G, "verdict"),
)
GPU_XID = _counter(
    "gpufleet_gpu_xid_errors_total",
    "XID events seen by this exporter since it started, by XID code.",
    (*G, "xid"),
)

GPU = EntityKind(
    GPU_LABELS,
    (
        Column(GPU_UTIL, "util_gpu"),
        Column(GPU_MEM_UTIL, "util_mem"),
        Column(GPU_SM_ACTIVE, "sm_active"),
        Column(GPU_TENSOR, "tensor_active"),
        Column(GPU_MEM_USED, "mem_used_bytes"),
        Column(GPU_MEM_TOTAL, "memory_total_bytes", slow=True),
        Column(GPU_POWER, "power_w"),
        Column(GPU_POWER_LIMIT, "power_limit_w", slow=True),
        Column(GPU_TEMP, "temp_c"),
        Column(GPU_SM_CLOCK, "sm_clock_mhz", scale=1e6),
        Column(GPU_PSTATE, "pstate"),
        Column(GPU_REASONS, "clock_reasons"),
        Column(GPU_ECC, "ecc_corr_vol", ("corrected", "volatile"), slow=True),
        Column(GPU_ECC, "ecc_unc_vol", ("uncorrected", "volatile"), slow=True),
        Column(GPU_ECC, "ecc_corr_agg", ("corrected", "aggregate"), slow=True),
        Column(GPU_ECC, "ecc_unc_agg", ("uncorrected", "aggregate"), slow=True),
        Column(GPU_RETIRED, "retired_sbe", ("sbe",), slow=True),
        Column(GPU_RETIRED, "retired_dbe", ("dbe",), slow=True),
        Column(GPU_RETIRED_PENDING, "retired_pending", slow=True),
        Column(GPU_REMAPPED, "remap_corr", ("correctable",), slow=True),
        Column(GPU_REMAPPED, "remap_unc", ("uncorrectable",), slow=True),
        Column(GPU_REMAP_PENDING, "remap_pending", slow=True),
        Column(GPU_REMAP_FAILURE, "remap_failure", slow=True),
        Column(GPU_PCIE_REPLAY, "pcie_replay", slow=True),
        Column(GPU_NVLINK_ACTIVE, "nvlink_active", slow=True),
        Column(GPU_NVLINK_TOTAL, "nvlink_total", slow=True),
        Column(GPU_NVLINK_CRC, "nvlink_crc_rate", slow=True),
        Column(GPU_LOST, "lost"),
        Flags(GPU_REASON, "clock_reasons", CLOCK_REASONS),
        OneHot(GPU_VERDICT, "verdict", VERDICTS),
        OneHot(GPU_PROBE, "probe_verdict", PROBE_VERDICTS),
    ),
)


def _port_active(port: PortSnapshot) -> bool | None:
    return None if port.state is None else port.state.upper() in ("ACTIVE", "UP")


def _port_info(port: PortSnapshot) -> tuple[tuple[tuple[str, ...], int], ...]:
    if port.state is None:
        return ()
    return (((port.state, port.phys_state or ""), 1),)


def _port_counters(port: PortSnapshot) -> tuple[tuple[tuple[str, ...], int | None], ...]:
    return tuple(((name,), value) for name, value in port.counters)


P = PORT_LABELS
PORT_ACTIVE = _gauge("gpufleet_port_active", "1 when the port state is ACTIVE (a NIC: up).", P)
PORT_INFO = _gauge(
    "gpufleet_port_info",
    "The port's state strings as labels; value 1.",
    (*P, "state", "phys_state"),
)
PORT_RATE = _gauge("gpufleet_port_rate_bits_per_second", "Link rate.", P)
PORT_EXPECTED = _gauge(
    "gpufleet_port_expected_rate_bits_per_second", "Link rate the configuration expects.", P
)
PORT_DOWNED = _counter(
    "gpufleet_port_link_downed_total", "Times the link went down (as the port counts).", P
)
PORT_ERRORS = _gauge(
    "gpufleet_port_errors_per_second", "Port error rate by kind of error.", (*P, "error")
)
PORT_RX = _gauge("gpufleet_port_receive_bytes_per_second", "Bytes received per second.", P)
PORT_TX = _gauge("gpufleet_port_transmit_bytes_per_second", "Bytes sent per second.", P)
PORT_COUNTER = _gauge(
    "gpufleet_port_counter",
    "Raw cumulative port counter as the node reports it (IB counters clamp at their width).",
    (*P, "counter"),
)
PORT_VERDICT = _gauge("gpufleet_port_verdict", "Port health verdict, one-hot.", (*P, "verdict"))

PORT = EntityKind(
    PORT_LABELS,
    (
        Column(PORT_RATE, "rate_gbps", scale=1e9),
        Column(PORT_EXPECTED, "expected_rate_gbps", scale=1e9),
        Column(PORT_DOWNED, "link_downed"),
        Column(PORT_ERRORS, "symbol_error_rate", ("symbol",)),
        Column(PORT_ERRORS, "rcv_error_rate", ("receive",)),
        Column(PORT_ERRORS, "xmit_discard_rate", ("transmit_discard",)),
        Column(PORT_RX, "rx_bytes_per_s"),
        Column(PORT_TX, "tx_bytes_per_s"),
        Derived(PORT_ACTIVE, _port_active),
        Labelled(PORT_INFO, _port_info),
        Labelled(PORT_COUNTER, _port_counters),
        OneHot(PORT_VERDICT, "verdict", VERDICTS),
    ),
)


def _node_info(node: NodeSnapshot) -> tuple[tuple[tuple[str, ...], int], ...]:
    fields = (node.model, node.driver, node.cuda, node.agent_version)
    return ((tuple(f or "" for f in fields), 1),)


N = NODE_LABELS
NODE_UP = _gauge("gpufleet_node_up", "1 while the node's agent streams samples.", N)
NODE_BROKEN = _gauge("gpufleet_node_broken", "1 when the node counts as down (broken or lost).", N)
NODE_STATE = _gauge("gpufleet_node_state", "Node health state, one-hot.", (*N, "state"))
NODE_STATUS = _gauge("gpufleet_node_status", "Node connection status, one-hot.", (*N, "status"))
NODE_EXPECTED = _gauge("gpufleet_node_gpus_expected", "GPUs the node should have.", N)
NODE_VISIBLE = _gauge("gpufleet_node_gpus_visible", "GPUs the node's agent reports.", N)
NODE_HEALTHY = _gauge("gpufleet_node_gpus_healthy", "GPUs whose verdict is ok or warn.", N)
NODE_SEEN = _gauge(
    "gpufleet_node_last_seen_timestamp_seconds", "When the node last sent anything.", N
)
NODE_INFO = _gauge(
    "gpufleet_node_info",
    "Node software and GPU model as labels; value 1.",
    (*N, "model", "driver", "cuda", "agent_version"),
)

NODE = EntityKind(
    NODE_LABELS,
    (
        Column(NODE_BROKEN, "broken"),
        Column(NODE_EXPECTED, "expected_gpus"),
        Column(NODE_HEALTHY, "healthy_gpus"),
        Column(NODE_SEEN, "last_seen"),
        Derived(NODE_UP, lambda node: node.status == "streaming"),
        Derived(NODE_VISIBLE, lambda node: len(node.gpus)),
        OneHot(NODE_STATE, "state", NODE_STATES),
        OneHot(NODE_STATUS, "status", NODE_STATUSES),
        Labelled(NODE_INFO, _node_info),
    ),
)


def _utilization(snapshot: FleetSnapshot) -> tuple[tuple[tuple[str, ...], float | None], ...]:
    u = snapshot.utilization
    return ((("now",), u.now), (("1h",), u.avg_1h), (("24h",), u.avg_24h))


FLEET_NODES = _gauge("gpufleet_fleet_nodes", "Nodes in the fleet.", ())
FLEET_STREAMING = _gauge("gpufleet_fleet_nodes_streaming", "Nodes streaming samples.", ())
FLEET_BROKEN = _gauge("gpufleet_fleet_nodes_broken", "Nodes broken or unreachable.", ())
FLEET_GPUS = _gauge("gpufleet_fleet_gpus", "GPUs expected or seen in the fleet.", ())
FLEET_HEALTHY = _gauge("gpufleet_fleet_gpus_healthy", "GPUs whose verdict is ok or warn.", ())
FLEET_UTIL = _gauge(
    "gpufleet_fleet_utilization_percent", "Fleet utilization now and averaged.", ("window",)
)
FLEET_TAKEN = _gauge("gpufleet_snapshot_timestamp_seconds", "When the snapshot was taken.", ())

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
SLA_AVAILABILITY = _gauge(
    "gpufleet_sla_availability_percent", "Month-to-date availability of the contract.", S
)
SLA_OBJECTIVE = _gauge("gpufleet_sla_objective_percent", "Availability the contract promises.", S)
SLA_COVERAGE = _gauge("gpufleet_sla_coverage_percent", "Share of the month monitored.", S)
SLA_DOWN = _gauge("gpufleet_sla_down_node_hours", "Node-hours counted down this month.", S)
SLA_TIER = _gauge("gpufleet_sla_credit_tier_percent", "Credit tier reached, percent.", S)
SLA_CREDIT = _gauge(
    "gpufleet_sla_credit_owed", "Credit owed so far this month.", (*S, "currency", "credit_model")
)

SLA = EntityKind(
    SLA_LABELS,
    (
        Column(SLA_AVAILABILITY, "availability_pct"),
        Column(SLA_OBJECTIVE, "slo_pct"),
        Column(SLA_COVERAGE, "coverage_pct"),
        Column(SLA_DOWN, "down_node_hours"),
        Column(SLA_TIER, "tier_credit_pct"),
        Labelled(SLA_CREDIT, _credit),
    ),
)

SCRAPE_DURATION = _gauge(
    "gpufleet_scrape_duration_seconds", "How long the previous scrape took to build.", ()
)


def _families() -> tuple[Family, ...]:
    seen: dict[Family, None] = {}
    for kind in (GPU, PORT, NODE, FLEET, SLA):
        for spec in kind.specs:
            seen.setdefault(spec.family, None)
    seen[GPU_XID] = None
    seen[SCRAPE_DURATION] = None
    return tuple(seen)


FAMILIES: tuple[Family, ...] = _families()
"""Every family in exposition order; both paths emit all of them, with or without samples."""
