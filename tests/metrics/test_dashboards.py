"""Dashboards against real Prometheus scraping a simulated fleet over loopback SSH.

Prometheus discovers one target per node through gpufleet's ``/sd`` (http_sd_configs)
and scrapes ``/metrics`` as one more target. Every PromQL expression of NVIDIA's
dcgm-exporter dashboard (tests/metrics/dcgm_exporter_dashboard_queries.json, with its
source) and of gpufleet's own dashboard (docs/grafana/gpufleet.json) is evaluated
through Prometheus' HTTP API and must return data: the DCGM ones for every node and GPU.
``promtool check metrics`` reads both endpoints of the same live fleet.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from exporter.endpoint import start_metrics_endpoint
from gpufleet.config import Config, parse_config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.metrics.prom import Prometheus, running_prometheus
from tests.metrics.test_promtool import DCGM_NAMING, promtool_findings

HERE = Path(__file__).parent
DCGM_DASHBOARD = json.loads((HERE / "dcgm_exporter_dashboard_queries.json").read_text())
GPUFLEET_DASHBOARD = json.loads(
    (HERE.parent.parent / "docs" / "grafana" / "gpufleet.json").read_text()
)
NODES = ("node-001", "node-002", "node-003")
GPUS = 8
# GPU 5 of node-002 has a double-bit ECC error (XID 48): it fails, with a reason, and its
# node is broken, so the failure panels have something to show; its readings go on. The
# fault comes once the agents stream: NVML reports no XID from before they registered.
SCENARIO = """
gpus = 8

[[fault]]
kind = "ecc_dbe"
node = "node-002"
gpu = 5
at = "8s"
"""

# The runtime refreshes its SLA and ledger figures every 30 s; every 5 s here, so the
# second refresh, the first with monitored time, comes while the fleet is brought up.
SLA_REFRESH_S = 5.0

# Starting the fleet and Prometheus counts against the first test that uses the fixture.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]


def _prometheus_config(port: int) -> str:
    return (
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n"
        "  - job_name: gpufleet\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        "  - job_name: dcgm\n"
        "    http_sd_configs:\n"
        f"      - url: http://127.0.0.1:{port}/sd\n        refresh_interval: 1s\n"
    )


ENDPOINT: dict[str, str] = {}  # "url" of the module's metrics endpoint, while it runs


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def prometheus(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("dashboards")
    scenario = tmp / "scenario.toml"
    scenario.write_text(SCENARIO)
    config = parse_config(
        {
            "fleet": {"hosts": ["node-[001-003]"], "interval": 0.5, "slow_interval": 1.0},
            "probes": {"probe_python": sys.executable},
            "sla": {
                "committed_nodes": 3,
                "gpu_hour_price": 2,
                "tiers": [{"below": 99.5, "credit_percent": 10}],
            },
        }
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpufleet.runtime.SLA_REFRESH_S", SLA_REFRESH_S)
        async with _fleet_and_prometheus(tmp, config) as prom:
            yield prom


@contextlib.asynccontextmanager
async def _fleet_and_prometheus(tmp: Path, config: Config) -> AsyncIterator[Prometheus]:
    scenario = tmp / "scenario.toml"
    async with LoopbackFleet(nodes=len(NODES), gpus=GPUS, scenario=scenario, seed=11) as lf:
        runtime = FleetRuntime(
            config, lf.targets(interval=0.5, slow_interval=1.0), data_dir=tmp / "data"
        )
        await runtime.start()
        server = await start_metrics_endpoint("127.0.0.1:0", runtime, gzip=False)
        try:
            config_text = _prometheus_config(server.bound_port)
            async with running_prometheus([], tmp, config_text=config_text) as prom:
                every = len(NODES) * GPUS
                await prom.wait_for(
                    "count(DCGM_FI_DEV_GPU_TEMP)",
                    lambda r: bool(r) and int(r[0]["value"][1]) == every,
                    within=60,
                )
                await prom.wait_for("gpufleet_gpu_xid_errors_total", bool, within=60)
                ENDPOINT["url"] = server.url
                yield prom
        finally:
            await server.stop()
            await runtime.stop()


def _instances(result: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r["metric"]["instance"], r["metric"]["gpu"]) for r in result}


async def test_dcgm_dashboard_variables_list_every_node_and_gpu(prometheus: Prometheus) -> None:
    values = {}
    for variable in DCGM_DASHBOARD["variables"]:
        metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]).groups()
        values[variable["name"]] = await prometheus.label_values(label, metric)
    assert sorted(values["instance"]) == list(NODES)  # one instance per node, via /sd
    assert sorted(values["gpu"], key=int) == [str(i) for i in range(GPUS)]


@pytest.mark.parametrize("panel", DCGM_DASHBOARD["panels"], ids=lambda p: p["title"])
async def test_every_dcgm_dashboard_panel_has_data_for_every_node_and_gpu(
    prometheus: Prometheus, panel: dict[str, str]
) -> None:
    all_gpus = "|".join(str(i) for i in range(GPUS))  # what Grafana sends for "All"
    everything = await prometheus.query(
        panel["expr"].replace("$instance", "|".join(NODES)).replace("$gpu", all_gpus)
    )
    assert everything, panel
    per_gpu = "instance" in everything[0]["metric"]
    if per_gpu:
        assert _instances(everything) == {(n, str(g)) for n in NODES for g in range(GPUS)}
    for node in NODES:  # the dashboard with one instance picked
        for gpu in range(GPUS):
            expr = panel["expr"].replace("$instance", node).replace("$gpu", str(gpu))
            result = await prometheus.query(expr)
            assert result, (expr, "no data")
            if per_gpu:
                assert _instances(result) == {(node, str(gpu))}


def _gpufleet_targets() -> list[tuple[str, str]]:
    return [
        (panel["title"], target["expr"])
        for panel in GPUFLEET_DASHBOARD["panels"]
        for target in panel["targets"]
    ]


@pytest.mark.parametrize(("title", "expr"), _gpufleet_targets(), ids=lambda v: str(v)[:40])
async def test_every_gpufleet_dashboard_expression_has_data(
    prometheus: Prometheus, title: str, expr: str
) -> None:
    # The SLA figures come with the runtime's second SLA refresh (SLA_REFRESH_S in): the
    # first one has nothing monitored yet, and availability is absent rather than made up.
    result = await prometheus.wait_for(expr.replace("$node", ".*"), bool, within=90)
    assert result, f"{title}: {expr} has no data"


async def test_gpufleet_dashboard_names_the_failed_gpu_and_its_reason(
    prometheus: Prometheus,
) -> None:
    panel = next(p for p in GPUFLEET_DASHBOARD["panels"] if p["title"].startswith("Failed GPUs"))
    result = await prometheus.query(panel["targets"][0]["expr"].replace("$node", ".*"))
    rows = {(r["metric"]["node"], r["metric"]["gpu"], r["metric"]["verdict"]) for r in result}
    assert rows == {("node-002", "5", "fail")}
    assert all(r["metric"]["reason"] for r in result)
    broken = await prometheus.query(
        'gpufleet_node_state{state=~"broken|unreachable",node=~".*"} == 1'
    )
    assert [r["metric"]["node"] for r in broken] == ["node-002"]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


async def test_promtool_on_the_live_fleets_endpoints(prometheus: Prometheus) -> None:
    native = await asyncio.to_thread(_get, f"{ENDPOINT['url']}/metrics")
    assert b"gpufleet_port_rate_bytes_per_second{" in native  # the simulated IB ports
    assert promtool_findings(native) == []
    dcgm = await asyncio.to_thread(_get, f"{ENDPOINT['url']}/metrics/dcgm")
    # The simulated H100 answers the fabric query, so dcgm-exporter's own
    # DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY is there too, and promtool reads "summary" as a type.
    fabric = "metric name should not include type 'summary'"
    assert {f.split(" ", 1)[1] for f in promtool_findings(dcgm)} == {*DCGM_NAMING, fabric}
