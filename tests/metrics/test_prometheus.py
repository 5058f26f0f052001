"""A real Prometheus scrapes the endpoint; PromQL sees the fleet as the snapshot says."""

from __future__ import annotations

import math
from pathlib import Path

from bench.lib.metrics_fleets import troubled_fleet
from exporter.server import MetricsServer
from exporter.text import ExpositionRenderer
from tests.metrics.prom import running_prometheus


async def test_prometheus_scrapes_gpus_verdicts_and_broken_nodes(tmp_path: Path) -> None:
    snapshot = troubled_fleet()
    renderer = ExpositionRenderer()
    server = MetricsServer("127.0.0.1:0", stream=lambda: renderer.stream_parts(snapshot))
    await server.start()
    gpus = [g for n in snapshot.nodes for g in n.gpus]
    reporting = [g for g in gpus if g.util_gpu is not None and not math.isnan(g.util_gpu)]
    lost = snapshot.nodes[1].gpus[3]
    try:
        async with running_prometheus([f"127.0.0.1:{server.bound_port}"], tmp_path) as prom:
            up = await prom.wait_for("up", lambda r: bool(r) and r[0]["value"][1] == "1")
            assert up[0]["metric"]["job"] == "gpufleet"
            count = await prom.wait_for(
                "count(gpufleet_gpu_utilization_percent)", lambda r: bool(r)
            )
            assert int(count[0]["value"][1]) == len(reporting)
            every = await prom.query("count(count by (uuid) (gpufleet_gpu_verdict))")
            assert int(every[0]["value"][1]) == len(gpus)
            failed = await prom.query('gpufleet_gpu_verdict{verdict=~"fail|lost"} == 1')
            assert [r["metric"]["uuid"] for r in failed] == [lost.uuid]
            assert failed[0]["metric"]["verdict"] == "lost"
            broken = await prom.query("gpufleet_node_broken == 1")
            assert sorted(r["metric"]["node"] for r in broken) == ["n2", "n3"]
            state = await prom.query('gpufleet_node_state{state="broken"} == 1')
            assert [r["metric"]["node"] for r in state] == ["n2"]
            xid = await prom.query('gpufleet_gpu_xid_errors_total{xid="79"}')
            assert [(r["metric"]["uuid"], r["value"][1]) for r in xid] == [(lost.uuid, "1")]
    finally:
        await server.stop()
