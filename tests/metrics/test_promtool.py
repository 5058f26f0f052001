"""Prometheus' own linter, ``promtool check metrics``, on both expositions as served."""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request

from bench.lib.metrics_fleets import troubled_fleet
from exporter.endpoint import start_metrics_endpoint
from tests.metrics.test_endpoint import PublishingFleet

PROMTOOL = "/usr/bin/promtool"
# What dcgm-exporter's own names earn from promtool: the label `modelName` is camelCase,
# its counters (DCGM_FI_DEV_ECC_*_TOTAL, ...) have no `_total` suffix and one is called
# DCGM_FI_DEV_PCIE_REPLAY_COUNTER. Dashboards query exactly these names, so
# /metrics/dcgm keeps them.
DCGM_NAMING = (
    "label names should be written in 'snake_case' not 'camelCase'",
    'counter metrics should have "_total" suffix',
    "metric name should not include type 'counter'",
)


def promtool_findings(exposition: bytes) -> list[str]:
    """Every problem ``promtool check metrics`` reports (empty when it passes)."""
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=exposition, capture_output=True, check=False
    )
    findings = (done.stdout + done.stderr).decode().splitlines()
    assert (done.returncode == 0) == (findings == []), findings
    return findings


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


async def _served(path: str) -> bytes:
    fleet = PublishingFleet()
    fleet.publish(troubled_fleet())
    server = await start_metrics_endpoint("127.0.0.1:0", fleet)
    try:
        return await asyncio.to_thread(_get, f"{server.url}{path}")
    finally:
        await server.stop()


async def test_native_metrics_pass_promtool() -> None:
    body = await _served("/metrics")
    assert b"gpufleet_port_rate_bytes_per_second{" in body  # ports, SLA and XIDs all present
    assert b"gpufleet_sla_down_node_seconds{" in body
    assert b"gpufleet_gpu_xid_errors_total{" in body
    assert promtool_findings(body) == []


async def test_dcgm_metrics_only_carry_dcgm_exporters_own_naming() -> None:
    body = await _served("/metrics/dcgm")
    findings = promtool_findings(body)
    assert findings, "promtool did not see dcgm-exporter's names"
    assert {f.split(" ", 1)[1] for f in findings} == set(DCGM_NAMING)
    # Without those three namings (and nothing else changed) it is clean.
    relabelled = (
        body.replace(b"modelName=", b"model_name=")
        .replace(b" counter\n", b" gauge\n")
        .replace(b"PCIE_REPLAY_COUNTER", b"PCIE_REPLAYS")
    )
    assert promtool_findings(relabelled) == []


def test_promtool_flags_the_names_gpufleet_used_to_have() -> None:
    old = (
        b"# HELP gpufleet_port_counter Raw counter.\n# TYPE gpufleet_port_counter gauge\n"
        b'gpufleet_port_counter{node="n1"} 1\n'
        b"# HELP gpufleet_port_rate_bits_per_second Rate.\n"
        b"# TYPE gpufleet_port_rate_bits_per_second gauge\n"
        b'gpufleet_port_rate_bits_per_second{node="n1"} 1\n'
        b"# HELP gpufleet_sla_down_node_hours Down.\n# TYPE gpufleet_sla_down_node_hours gauge\n"
        b'gpufleet_sla_down_node_hours{month="2026-11"} 1\n'
    )
    assert len(promtool_findings(old)) == 3  # the oracle sees what the renames fixed
