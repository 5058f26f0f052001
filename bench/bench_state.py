"""Benchmark: FleetState ingest + snapshot at 1,000 nodes x (8 GPUs + 8 ports).

Baseline in the same run: a naive state that turns every sample into per-field dicts
at ingest and rebuilds every snapshot object (with the same health rules) each tick.
Two ticks are measured: a busy one (every node sent a sample) and a quiet one (10%
of the nodes sent a sample, the rest are silent), where reuse pays most.

Times are CPU seconds of this process (time.process_time), so other work on a shared
machine does not inflate them. Run: .venv/bin/python bench/bench_state.py [--nodes 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.agent.fields import (
    GPU_FIELDS,
    GPU_SLOW_FIELDS,
    IB_PHYS_STATES,
    IB_PORT_STATES,
    PORT_COUNTER_BITS,
    PORT_FIELDS,
)
from collectors.protocol import GpuInfo, Hello, PortInfo, Sample, Value
from collectors.updates import NodeMessage, NodeStatusChange, NodeUpdate
from fleet.health import (
    GpuFacts,
    GpuVerdictView,
    PortFacts,
    judge_gpu,
    judge_node,
    judge_port,
    node_status_view,
)
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec

GPUS, PORTS = 8, 8
_TRAFFIC = {"port_xmit_wait": 1_000, "port_xmit_data": 12_500_000_000 // 4,
            "port_rcv_data": 12_000_000_000 // 4, "port_xmit_packets": 3_000_000,
            "port_rcv_packets": 2_900_000}  # fmt: skip


_GPU_SNAPSHOT_FIELDS = frozenset(GpuSnapshot.__dataclass_fields__)
_RATED = ("symbol_error", "port_rcv_errors", "port_xmit_discards", "port_xmit_data",
          "port_rcv_data")  # fmt: skip


class NaiveState:
    """The baseline: per-field dicts at ingest, every snapshot object rebuilt every tick."""

    def __init__(self, names: list[str], cfg: HealthSection) -> None:
        self.cfg = cfg
        self.nodes: dict[str, dict] = {n: {"status": "connecting", "gpus": []} for n in names}

    def ingest(self, update: NodeUpdate) -> None:
        node = self.nodes[update.node]
        if isinstance(update, NodeStatusChange):
            node["status"] = update.status
            return
        msg = update.message
        if isinstance(msg, Hello):
            node.update(hello=msg, gpus=[], ports=[], slow=[], prev_ports=None, prev_t=None)
        elif isinstance(msg, Sample):
            hello_msg = node["hello"]
            node["prev_ports"], node["prev_t"] = node.get("ports"), node.get("t")
            node["t"], node["received"] = msg.t, update.received
            node["gpus"] = [dict(zip(hello_msg.gpu_fields, row or (), strict=False))
                            for row in msg.gpus]  # fmt: skip
            node["ports"] = [dict(zip(hello_msg.port_fields, row, strict=False))
                             for row in msg.ports]  # fmt: skip
            if msg.slow is not None:
                node["slow"] = [dict(zip(hello_msg.gpu_slow_fields, row or (), strict=False))
                                for row in msg.slow]  # fmt: skip

    def snapshot(self, now: float) -> FleetSnapshot:
        nodes = tuple(self._node(name, node, now) for name, node in self.nodes.items())
        return FleetSnapshot(taken_at=now, nodes=nodes)

    def _node(self, name: str, node: dict, now: float) -> NodeSnapshot:
        cfg, hello_msg = self.cfg, node["hello"]
        gpus = []
        for info, fast, slow in zip(hello_msg.gpus, node["gpus"], node["slow"], strict=False):
            facts = GpuFacts(sampled=True, clock_reasons=fast.get("clock_reasons"),
                             ecc_unc_vol=slow.get("ecc_unc_vol"),
                             remap_pending=bool(slow.get("remap_pending")),
                             nvlink_active=slow.get("nvlink_active"),
                             nvlink_total=slow.get("nvlink_total"))  # fmt: skip
            verdict, reasons, _ = judge_gpu(facts, cfg, now)
            values = {k: v for k, v in (fast | slow).items() if k in _GPU_SNAPSHOT_FIELDS}
            gpus.append(GpuSnapshot(info.index, info.uuid, info.name, verdict=verdict,
                                    reasons=reasons, **values))  # fmt: skip
        ports, judgements = [], []
        prev, dt = node["prev_ports"], node["t"] - (node["prev_t"] or 0.0)
        for i, (info, row) in enumerate(zip(hello_msg.ports, node["ports"], strict=False)):
            before = prev[i] if prev else row
            rates = {k: (row[k] - before[k]) / dt for k in _RATED}
            port = PortFacts(info.name, info.kind, sampled=True,
                              state=IB_PORT_STATES[row["state"]],
                              phys_state=IB_PHYS_STATES[row["phys_state"]],
                              rate_gbps=row["rate_gbps"],
                              symbol_error_rate=rates["symbol_error"],
                              rcv_error_rate=rates["port_rcv_errors"],
                              xmit_discard_rate=rates["port_xmit_discards"])  # fmt: skip
            judgement = judge_port(port, 400.0, cfg, now)
            judgements.append(judgement)
            counters = tuple((k, v) for k, v in row.items() if k in PORT_COUNTER_BITS)
            ports.append(PortSnapshot(info.name, info.kind, state=port.state,
                                      phys_state=port.phys_state, rate_gbps=port.rate_gbps,
                                      symbol_error_rate=port.symbol_error_rate,
                                      rcv_error_rate=port.rcv_error_rate,
                                      xmit_discard_rate=port.xmit_discard_rate,
                                      rx_bytes_per_s=rates["port_rcv_data"] * 4,
                                      tx_bytes_per_s=rates["port_xmit_data"] * 4,
                                      counters=counters, verdict=judgement.verdict,
                                      reasons=judgement.reasons))  # fmt: skip
        view = node_status_view(node["status"], "", node["received"], 1.0, cfg, now)
        views = [GpuVerdictView(g.index, g.verdict, g.reasons) for g in gpus]
        state, reasons, _ = judge_node(view, views, 8, judgements, cfg, now)
        return NodeSnapshot(name, view.status, state=state, broken_reasons=reasons,
                            gpus=tuple(gpus), ports=tuple(ports))  # fmt: skip


def hello(node: str) -> NodeMessage:
    gpus = [GpuInfo(i, f"GPU-{node}-{i}", "NVIDIA H100", nvlinks=18) for i in range(GPUS)]
    ports = [PortInfo(f"mlx5_{i}/1", "ib") for i in range(PORTS)]
    message = Hello(1, 0.0, "bench", node, 1.0, 10.0, list(GPU_FIELDS), list(GPU_SLOW_FIELDS),
                    list(PORT_FIELDS), [], gpus, ports)  # fmt: skip
    return NodeMessage(node, message, 0.0)


def sample(node: str, tick: int, slow: bool) -> NodeMessage:
    fast: list[list[Value] | None]
    port: list[Value]
    slow_rows: list[list[Value] | None]
    fast = [[(tick * 7 + g) % 100, 20, 40.0, 10.0, 1024, 300.5 + tick % 9, 55, 1980, 0, 0]
            for g in range(GPUS)]  # fmt: skip
    # A healthy fleet: error counters still, traffic counters moving.
    port = [_TRAFFIC.get(name, 0) * tick for name in PORT_FIELDS]
    port[:3] = [4, 5, 400.0]
    slow_rows = [[0] * 13 + [18, 18, 0, 0, 0, 0, 700.0] for _ in range(GPUS)]
    message = Sample(1, float(tick), tick, fast, [list(port) for _ in range(PORTS)],
                     slow=slow_rows if slow else None)  # fmt: skip
    return NodeMessage(node, message, float(tick))


def tick_messages(names: list[str], tick: int, share: float) -> list[NodeUpdate]:
    count = max(1, int(len(names) * share))
    return [sample(name, tick, slow=tick % 10 == 0) for name in names[:count]]


def run(
    make: Callable[[], object], names: list[str], ticks: int, share: float, read_all: bool = False
) -> list[float]:
    """Seconds per tick (ingest of the tick's samples + one snapshot).

    ``read_all``: also read every node's GPU, port and NIC objects, as a scrape does
    (FleetState builds them on first access; the naive baseline always has them).
    """
    state = make()
    for name in names:
        state.ingest(NodeStatusChange(name, "streaming", "", 0.0))  # type: ignore[attr-defined]
        state.ingest(hello(name))  # type: ignore[attr-defined]
        state.ingest(sample(name, 1, slow=True))  # type: ignore[attr-defined]
    state.snapshot(1.0)  # type: ignore[attr-defined]
    timings = []
    for tick in range(2, ticks + 2):
        messages = tick_messages(names, tick, share)
        start = time.process_time()
        for message in messages:
            state.ingest(message)  # type: ignore[attr-defined]
        snapshot: FleetSnapshot = state.snapshot(float(tick))  # type: ignore[attr-defined]
        if read_all:
            for node in snapshot.nodes:
                _ = (node.gpus, node.ports, node.nics)
        timings.append(time.process_time() - start)
    return timings


def ingest_only(names: list[str], ticks: int) -> float:
    """Microseconds per sample message for FleetState.ingest and the counters' flush.

    Port counters advance for the whole fleet at the next snapshot's flush, so that
    flush is part of ingesting: it is timed here too (no snapshot is taken).
    """
    state = FleetState([NodeSpec(n) for n in names], HealthSection())
    for name in names:  # the session starts with its first sample: keep that out
        state.ingest(hello(name))
        state.ingest(sample(name, 1, slow=True))
    state._ports.flush()  # the first samples' counters too (a tree may leave them staged)
    messages = [m for t in range(2, ticks + 2) for m in tick_messages(names, t, 1.0)]
    start = time.process_time()
    for tick in range(ticks):
        for message in messages[tick * len(names) : (tick + 1) * len(names)]:
            state.ingest(message)
        state._ports.flush()  # the counters' share of the next snapshot
    return (time.process_time() - start) / len(messages) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=5)
    args = parser.parse_args()
    names = [f"gpu-{i:04d}" for i in range(args.nodes)]
    cfg = HealthSection()

    def ours() -> object:
        return FleetState([NodeSpec(n) for n in names], cfg)

    def naive() -> object:
        return NaiveState(names, cfg)

    print(f"{args.nodes} nodes x ({GPUS} GPUs + {PORTS} ports), {args.ticks} ticks, CPU time")
    print(f"FleetState.ingest: {ingest_only(names, args.ticks):.1f} us per sample message")
    cases = (
        ("busy tick (all nodes sampled)", 1.0, False),
        ("busy tick, every object read", 1.0, True),
        ("quiet tick (10% sampled)", 0.1, False),
    )
    for label, share, read_all in cases:
        ours_t = run(ours, names, args.ticks, share, read_all)
        naive_t = run(naive, names, args.ticks, share, read_all)
        for stat, pick in (("median", statistics.median), ("best", min)):
            fast, slow = pick(ours_t), pick(naive_t)
            print(f"{label}, {stat}: FleetState {fast * 1e3:.1f} ms, "
                  f"naive baseline {slow * 1e3:.1f} ms, ratio {slow / fast:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
