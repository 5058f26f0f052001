"""The repairs and delivery ledgers of a running fleet: refreshed off the tick, served on
/metrics, listed per node for the node screen, and one event-log line per resolved repair.
The history is the repairs scenario's, written to disk in the documented layout."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.endpoint import start_metrics_endpoint
from fleet.facade import HasRepairHistory
from gpufleet.config import parse_config
from gpufleet.ledger_figures import LedgerFigures, compute_figures
from gpufleet.runtime import FleetRuntime
from ledger.delivery.section import EnergySection
from tests.repairs import scenario

END_S = scenario.ms(scenario.END_H) / 1000


def _runtime(data_dir: Path) -> FleetRuntime:
    config = parse_config({"fleet": {"hosts": ["gpu-a"]}})
    return FleetRuntime(config, [], data_dir=data_dir)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_repairs_resolved_after_the_first_refresh_are_each_one_log_line(tmp_path: Path) -> None:
    scenario.write(tmp_path)
    figures = LedgerFigures()
    # At 12 h gpu-d and gpu-b's first repair are done: history before this process.
    assert (
        figures.update(compute_figures(tmp_path, None, EnergySection(), scenario.ms(12) / 1000))
        == []
    )
    entries = figures.update(compute_figures(tmp_path, None, EnergySection(), END_S))
    assert sorted((e.node, e.kind) for e in entries) == [
        ("gpu-a", "repair"),
        ("gpu-b", "repair"),
        ("gpu-c", "repair"),
    ]
    gpu_a = next(e for e in entries if e.node == "gpu-a")
    assert (
        gpu_a.text == "gpu-a GPU 3: gpu_xid, acked +30 min (T-1), gpu_swap +3.9 h, healthy +4.0 h"
    )
    assert gpu_a.t == scenario.ms(14) / 1000
    assert figures.update(compute_figures(tmp_path, None, EnergySection(), END_S)) == []


async def test_the_runtime_serves_the_ledger_families_and_the_node_repair_history(
    tmp_path: Path,
) -> None:
    scenario.write(tmp_path)
    runtime = _runtime(tmp_path)
    try:
        runtime._refresh_ledgers(END_S)  # what each tick's figures stage does when due
        result = await runtime.ledgers_refreshed()
        assert result.repairs is not None
        assert isinstance(runtime, HasRepairHistory)
        rows, serials = runtime.repair_history("gpu-a")
        assert [(r.detected, r.kind, r.breached) for r in rows] == [
            ("2026-11-02 10:00Z", "gpu_swap", False)
        ]
        assert rows[0].line.startswith("gpu-a GPU 3: gpu_xid, acked +30 min (T-1)")
        assert serials  # the swapped GPU's serial, as the history first saw it
        assert runtime.repair_history("nowhere") == ((), ())

        server = await start_metrics_endpoint("127.0.0.1:0", runtime, gzip=False)
        try:
            url = f"{server.url}/metrics"
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
        finally:
            await server.stop()
        samples = _samples(body.decode())
        assert samples[("gpufleet_repair_failures", (("class", "gpu_xid"),))] == 2
        assert samples[("gpufleet_node_mtbf_seconds", (("node", "gpu-b"),))] == 24 * 3600
        assert ("gpufleet_delivery_gpu_energy_joules", ()) in samples
    finally:
        runtime.history.close()
        runtime.desk.close()
