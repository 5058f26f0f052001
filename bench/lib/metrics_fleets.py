"""Fleets for the exporter benches: snapshots built from fleet.model types, and the
state's own snapshots with troubled nodes (the same shapes the exporter's tests use).

Values vary per GPU (seeded) so a mixed-up label or column shows up as a wrong value.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

from exporter.catalog import SCRAPE_DURATION
from exporter.text import NODES_PER_CHUNK
from fleet.model import (
    EventRecord,
    FleetSnapshot,
    GpuSnapshot,
    NodeSnapshot,
    PortSnapshot,
    SlaSummary,
    UtilizationSummary,
)

H100 = "NVIDIA H100 80GB HBM3"
IB_COUNTERS = ("symbol_error", "link_downed", "port_rcv_errors", "port_xmit_discards")


def gpu(rng: random.Random, node: str, index: int) -> GpuSnapshot:
    """A healthy, busy GPU with every field set."""
    return GpuSnapshot(
        index=index,
        uuid=f"GPU-{node}-{index:02d}-{rng.getrandbits(32):08x}",
        name=H100,
        memory_total_bytes=85_520_809_984,
        util_gpu=float(rng.randint(0, 100)),
        util_mem=float(rng.randint(0, 100)),
        sm_active=round(rng.uniform(0, 100), 1),
        tensor_active=round(rng.uniform(0, 100), 1),
        mem_used_bytes=rng.randint(0, 80_000) * 1_048_576,
        power_w=round(rng.uniform(60, 700), 1),
        power_limit_w=700.0,
        temp_c=float(rng.randint(30, 85)),
        sm_clock_mhz=float(rng.choice((1410, 1755, 1980))),
        clock_reasons=rng.choice((0, 1, 4, 0x44)),
        pstate=0,
        ecc_corr_vol=rng.randint(0, 5),
        ecc_unc_vol=0,
        ecc_corr_agg=rng.randint(0, 50),
        ecc_unc_agg=0,
        retired_sbe=0,
        retired_dbe=0,
        retired_pending=False,
        remap_corr=rng.randint(0, 2),
        remap_unc=0,
        remap_pending=False,
        remap_failure=False,
        pcie_replay=rng.randint(0, 3),
        nvlink_active=18,
        nvlink_total=18,
        nvlink_crc_rate=0.0,
        verdict="ok",
    )


def port(rng: random.Random, index: int) -> PortSnapshot:
    """An ACTIVE 400 Gb/s InfiniBand port with a few counters."""
    return PortSnapshot(
        name=f"mlx5_{index}/1",
        kind="ib",
        state="ACTIVE",
        phys_state="LinkUp",
        rate_gbps=400.0,
        expected_rate_gbps=400.0,
        link_downed=0,
        symbol_error_rate=0.0,
        rcv_error_rate=0.0,
        xmit_discard_rate=0.0,
        rx_bytes_per_s=float(rng.randint(0, 50_000_000_000)),
        tx_bytes_per_s=float(rng.randint(0, 50_000_000_000)),
        counters=tuple((name, rng.randint(0, 9)) for name in IB_COUNTERS),
        verdict="ok",
    )


def node(rng: random.Random, name: str, gpus: int = 8, ports: int = 0) -> NodeSnapshot:
    """A streaming, healthy node."""
    return NodeSnapshot(
        name=name,
        status="streaming",
        last_seen=1_790_000_000.0,
        state="up",
        expected_gpus=gpus,
        gpus=tuple(gpu(rng, name, i) for i in range(gpus)),
        ports=tuple(port(rng, i) for i in range(ports)),
        driver="580.65.06",
        cuda="13.0",
        agent_version="0.1.0",
        model=H100,
    )


def fleet(nodes: int, gpus: int = 8, ports: int = 0, seed: int = 7) -> FleetSnapshot:
    """``nodes`` healthy nodes called n0001, n0002, …"""
    rng = random.Random(seed)
    return FleetSnapshot(
        taken_at=1_790_000_000.0,
        nodes=tuple(node(rng, f"n{i + 1:04d}", gpus, ports) for i in range(nodes)),
        utilization=UtilizationSummary(now=55.0, avg_1h=50.5, avg_24h=None),
    )


def troubled_fleet() -> FleetSnapshot:
    """Three nodes: n1 healthy; n2 with GPU 3 lost to XID 79 (broken); n3 unreachable.

    n1 GPU 0 has a quote, a backslash and a newline in its model name, and GPU 1
    failed to read its utilization and power (None) and its temperature (NaN).
    """
    rng = random.Random(3)
    healthy = node(rng, "n1", ports=2)
    odd = replace(healthy.gpus[0], name='Odd "GPU" 100% \\ model\nline2', probe_verdict="straggler")
    missing = replace(healthy.gpus[1], util_gpu=None, power_w=None, temp_c=float("nan"))
    healthy = replace(healthy, gpus=(odd, missing, *healthy.gpus[2:]), nics=(_nic(),))
    sick = node(rng, "n2")
    lost = replace(sick.gpus[3], lost=True, verdict="lost", util_gpu=None, reasons=("xid 79",))
    sick = replace(
        sick,
        gpus=(*sick.gpus[:3], lost, *sick.gpus[4:]),
        state="broken",
        broken_reasons=("7 of 8 GPUs healthy",),
    )
    gone = NodeSnapshot(name="n3", status="unreachable", status_reason="timed out")
    xid = EventRecord(t=1_790_000_000.0, node="n2", kind="xid", gpu=3, uuid=lost.uuid, code=79)
    return FleetSnapshot(
        taken_at=1_790_000_000.0,
        nodes=(healthy, sick, gone),
        utilization=UtilizationSummary(now=40.0, avg_1h=41.0, avg_24h=39.5),
        sla=SlaSummary(
            month="2026-11",
            availability_pct=99.2,
            slo_pct=99.5,
            coverage_pct=97.0,
            down_node_hours=5.5,
            tier_credit_pct=10.0,
            credit_owed=1234.5,
            currency="USD",
            credit_model="tier",
        ),
        new_events=(xid,),
    )


def _nic() -> PortSnapshot:
    return PortSnapshot(name="eth0", kind="eth", state="up", rate_gbps=100.0, verdict="ok")


def without_scrape_duration(body: bytes) -> bytes:
    """``body`` without the scrape-duration sample, which differs between any two renders."""
    prefix = SCRAPE_DURATION.name.encode() + b" "
    return b"".join(line for line in body.splitlines(True) if not line.startswith(prefix))


HOSTILE = 'H100 "80GB" \\ %s %d %%'
NODES = NODES_PER_CHUNK + 6  # two chunks


def _hostile_hello(line: bytes, node: int, tick: int) -> bytes:
    hello = json.loads(line)
    if node == 2:  # strings a node chose: quotes, backslashes and % in labels
        hello["gpus"][1]["name"] = HOSTILE
        hello["gpus"][2]["uuid"] = 'GPU-"%s"\\'
        hello["ports"][0]["name"] = 'mlx5_"0"%d/1'
    if node == 3:  # an agent that does not send GPM fields or the pstate
        fields = hello["gpu_fields"]
        hello["gpu_fields"] = [f for f in fields if f not in ("sm_active", "pstate")]
        hello["dropped"] = [fields.index("sm_active"), fields.index("pstate")]
    return json.dumps(hello).encode() + b"\n"


def _troubled_sample(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(line)
    if node == 1 and tick >= 2:
        sample["gpus"][3] = None  # a GPU without a reading (lost)
    if node == 3:  # rows as the reduced hello declares them
        for row in sample["gpus"]:
            del row[9], row[2]  # pstate, then sm_active
    if node == 4:
        sample["gpus"][0][0] = None  # one failed reading
        sample["gpus"][5][5] = 250.5
        sample["gpus"][6][8] = 2**63 + 1  # beyond float64's integers: written exactly
        sample["ports"][2][16] = None  # a counter that did not read
        sample["nics"][0][1] = None  # a NIC that reports no speed
    if node == 5 and tick == 3:
        sample["nics"][0][3] = 0  # a NIC counter that went backwards: a reset
    return json.dumps(sample).encode() + b"\n"


def troubled_ticks(count: int = NODES, ticks: int = 3) -> list[FleetSnapshot]:
    """The state's own snapshots of ``count`` canned nodes, with hostile labels, lost GPUs,
    failed readings and exact big integers among them."""
    from bench.lib.fleet_states import state_ticks  # the real runtime: imported when asked

    return state_ticks(count, ticks, _troubled_sample, edit_hello=_hostile_hello)
