"""A deterministic fleet built from the snapshot types: for previews, tests and benchmarks.

``demo_snapshot(nodes, t, seed)`` builds a fleet with a few typical faults: an XID 79
GPU off the bus, an ECC double-bit error, thermal slowdown, an unreachable node, an
InfiniBand port down, a degraded link and an NVLink CRC storm.
"""

from __future__ import annotations

import random
from dataclasses import replace

from fleet.facade import (
    EventRecord,
    FleetSnapshot,
    GpuSnapshot,
    NodeSnapshot,
    PortSnapshot,
    ProbeVerdict,
    SlaSummary,
    UtilizationSummary,
)

T0 = 1_794_000_000.0  # 2026-11-07, a fixed clock for reproducible pictures
GPU_MODEL = "NVIDIA H100 80GB HBM3"
XID79 = "XID 79: GPU has fallen off the bus"
XID48 = "XID 48: double-bit ECC error"


def node_name(i: int) -> str:
    return f"node-{i:04d}"


def _gpu(rng: random.Random, node: int, i: int) -> GpuSnapshot:
    busy = rng.random() < 0.8
    util = rng.uniform(60, 100) if busy else rng.uniform(0, 4)
    return GpuSnapshot(
        index=i,
        uuid=f"GPU-{node:04x}{i:02x}00-5eed-4a1e-9c3d-{node * 8 + i:012x}",
        name=GPU_MODEL,
        serial=f"16523{node * 8 + i:08d}",
        memory_total_bytes=80 * 2**30,
        mem_used_bytes=int((6 + util * 0.7) * 2**30),
        util_gpu=round(util, 1),
        util_mem=round(util * 0.6, 1),
        power_w=round(90 + util * 5.6, 1),
        power_limit_w=700.0,
        temp_c=round(32 + util * 0.45 + rng.uniform(-2, 2), 0),
        sm_clock_mhz=1980.0 if busy else 345.0,
        clock_reasons=0x0 if busy else 0x1,
        ecc_corr_vol=0,
        ecc_unc_vol=0,
        retired_sbe=0,
        retired_dbe=0,
        retired_pending=False,
        remap_corr=0,
        remap_unc=0,
        remap_pending=False,
        remap_failure=False,
        nvlink_active=18,
        nvlink_total=18,
        nvlink_crc_rate=0.0,
        nvlink_replay_delta=0,
        nvlink_recovery_delta=0,
        verdict="ok",
        since=T0 - 86_400,
    )


def _port(i: int) -> PortSnapshot:
    return PortSnapshot(
        name=f"mlx5_{i}",
        kind="ib",
        state="ACTIVE",
        phys_state="LinkUp",
        rate_gbps=400.0,
        expected_rate_gbps=400.0,
        link_downed=0,
        symbol_error_rate=0.0,
        rcv_error_rate=0.0,
        xmit_discard_rate=0.0,
        rx_bytes_per_s=12.5e9,
        tx_bytes_per_s=12.1e9,
        counters=(("symbol_error", 0), ("link_downed", 0), ("port_rcv_errors", 0)),
        verdict="ok",
        since=T0 - 86_400,
    )


def healthy_node(i: int, rng: random.Random, t: float) -> NodeSnapshot:
    return NodeSnapshot(
        name=node_name(i),
        status="streaming",
        last_seen=t,
        state="up",
        state_since=T0 - 86_400,
        gpus=tuple(_gpu(rng, i, g) for g in range(8)),
        ports=tuple(_port(p) for p in range(8)),
        driver="550.90.07",
        cuda="12.4",
        agent_version="0.1.0",
        model=GPU_MODEL,
    )


def lose_gpu(node: NodeSnapshot, gpu: int, t: float) -> NodeSnapshot:
    """GPU ``gpu`` fell off the bus (XID 79): the node is broken."""
    g = node.gpus[gpu]
    lost = replace(
        g,
        lost=True,
        verdict="lost",
        reasons=(XID79, "NVMLError_GpuIsLost"),
        since=t,
        util_gpu=None,
        power_w=None,
        temp_c=None,
        sm_clock_mhz=None,
        clock_reasons=None,
        mem_used_bytes=None,
    )
    event = EventRecord(
        t=t, node=node.name, kind="xid", gpu=gpu, uuid=g.uuid, code=79, detail=XID79
    )
    return _broken(node, gpu, lost, event, f"GPU {gpu} lost (XID 79)", t)


def ecc_fail(node: NodeSnapshot, gpu: int, t: float) -> NodeSnapshot:
    g = node.gpus[gpu]
    failed = replace(
        g,
        verdict="fail",
        ecc_unc_vol=2,
        retired_dbe=1,
        retired_pending=True,
        remap_unc=1,
        remap_pending=True,
        since=t,
        reasons=(XID48, "volatile uncorrected ECC 2", "row remap pending"),
    )
    event = EventRecord(
        t=t, node=node.name, kind="xid", gpu=gpu, uuid=g.uuid, code=48, detail=XID48
    )
    return _broken(node, gpu, failed, event, f"GPU {gpu} failed (ECC DBE)", t)


def _broken(
    node: NodeSnapshot, gpu: int, g: GpuSnapshot, event: EventRecord, reason: str, t: float
) -> NodeSnapshot:
    gpus = (*node.gpus[:gpu], g, *node.gpus[gpu + 1 :])
    return replace(
        node,
        gpus=gpus,
        state="broken",
        broken_reasons=(reason,),
        state_since=t,
        events=(*node.events, event),
    )


def thermal_warn(node: NodeSnapshot, gpu: int, t: float) -> NodeSnapshot:
    g = replace(
        node.gpus[gpu],
        verdict="warn",
        clock_reasons=0x48,
        temp_c=91.0,
        sm_clock_mhz=1410.0,
        reasons=("HW thermal slowdown",),
        since=t,
    )
    gpus = (*node.gpus[:gpu], g, *node.gpus[gpu + 1 :])
    ev = EventRecord(t=t, node=node.name, kind="clocks", gpu=gpu, detail="HW thermal slowdown")
    return replace(node, gpus=gpus, events=(*node.events, ev))


def unreachable(node: NodeSnapshot, t: float) -> NodeSnapshot:
    return replace(
        node,
        status="unreachable",
        status_reason="connect timeout after 10s",
        state="unreachable",
        broken_reasons=("unreachable",),
        state_since=t,
        last_seen=t - 95,
    )


def port_down(node: NodeSnapshot, port: int, t: float) -> NodeSnapshot:
    p = replace(
        node.ports[port],
        state="DOWN",
        phys_state="Polling",
        rate_gbps=None,
        link_downed=3,
        link_downed_delta=3,
        verdict="fail",
        reasons=("link down", "link_downed +3"),
        since=t,
    )
    ports = (*node.ports[:port], p, *node.ports[port + 1 :])
    return replace(
        node, ports=ports, state="broken", broken_reasons=(f"{p.name} down",), state_since=t
    )


def port_degraded(node: NodeSnapshot, port: int, t: float) -> NodeSnapshot:
    p = replace(
        node.ports[port],
        rate_gbps=200.0,
        symbol_error_rate=4.2,
        verdict="warn",
        reasons=("rate 200 < 400 Gb/s", "symbol errors 4.2/s"),
        since=t,
    )
    ports = (*node.ports[:port], p, *node.ports[port + 1 :])
    return replace(node, ports=ports)


def nvlink_storm(node: NodeSnapshot, gpu: int, t: float) -> NodeSnapshot:
    g = replace(
        node.gpus[gpu],
        verdict="warn",
        nvlink_crc_rate=37.5,
        nvlink_replay_delta=12,
        nvlink_active=17,
        reasons=("NVLink CRC 37.5/s", "1 of 18 links down"),
        since=t,
    )
    gpus = (*node.gpus[:gpu], g, *node.gpus[gpu + 1 :])
    return replace(node, gpus=gpus)


def demo_snapshot(
    nodes: int = 32, t: float = T0, seed: int = 7, faults: bool = True
) -> FleetSnapshot:
    """A fleet of ``nodes`` 8-GPU nodes, with the demo faults applied unless ``faults`` is False."""
    rng = random.Random(seed)
    fleet = [healthy_node(i, rng, t) for i in range(1, nodes + 1)]
    demo_faults = {
        3: lambda n: lose_gpu(n, 5, t - 1_800),
        7: lambda n: ecc_fail(n, 2, t - 7_200),
        11: lambda n: thermal_warn(n, 6, t - 600),
        12: lambda n: unreachable(n, t - 3_600),
        5: lambda n: port_down(n, 3, t - 900),
        9: lambda n: port_degraded(n, 1, t - 300),
        14: lambda n: nvlink_storm(n, 1, t - 120),
    }
    for i, fault in demo_faults.items():
        if faults and i <= nodes:
            fleet[i - 1] = fault(fleet[i - 1])
    return FleetSnapshot(taken_at=t, nodes=tuple(fleet), utilization=_util(fleet), sla=demo_sla())


def _util(fleet: list[NodeSnapshot]) -> UtilizationSummary:
    utils = [g.util_gpu for n in fleet for g in n.gpus if g.util_gpu is not None]
    now = sum(utils) / len(utils) if utils else None
    return UtilizationSummary(now=now, avg_1h=61.8, avg_24h=58.3)


def demo_sla() -> SlaSummary:
    return SlaSummary(
        month="2026-11",
        availability_pct=99.21,
        slo_pct=99.5,
        coverage_pct=98.7,
        down_node_hours=27.5,
        tier_credit_pct=10.0,
        credit_owed=4_312.80,
        currency="USD",
        credit_model="tier",
    )


def retick(snapshot: FleetSnapshot, t: float, seed: int) -> FleetSnapshot:
    """The next tick: every node a new object with every GPU's utilization changed."""
    rng = random.Random(seed)
    nodes = tuple(
        replace(
            n,
            last_seen=t,
            gpus=tuple(
                replace(g, util_gpu=None if g.util_gpu is None else round(rng.uniform(0, 100), 1))
                for g in n.gpus
            ),
        )
        for n in snapshot.nodes
    )
    return replace(snapshot, taken_at=t, nodes=nodes, transitions=(), new_events=())


def connecting(node: NodeSnapshot, reason: str = "connecting to 10.0.0.1:22") -> NodeSnapshot:
    """A node not yet sampled, as the fleet state hands it out (unreachable, no GPUs)."""
    return replace(
        node,
        status="connecting",
        status_reason=reason,
        state="unreachable",
        broken_reasons=("connecting: no sample yet",),
        gpus=(),
        ports=(),
        nics=(),
        last_seen=None,
    )


def probe_flag(node: NodeSnapshot, gpu: int, verdict: ProbeVerdict) -> NodeSnapshot:
    """``node`` with GPU ``gpu`` judged ``verdict`` by the last probe."""
    gpus = tuple(replace(g, probe_verdict=verdict) if g.index == gpu else g for g in node.gpus)
    return replace(node, gpus=gpus)
