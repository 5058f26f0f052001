"""docs/scale-out.md's Prometheus config, run for real: shards → Prometheus → VictoriaMetrics.

The test takes the configuration and the PromQL table out of the document, so the
document is what is tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.endpoint import start_metrics_endpoint
from tests.cluster.conftest import EXPECTED_STATE, ShardedFleet
from tests.metrics.prom import listening, prometheus_command
from tests.runtime.waits import wait_until, wait_until_async

pytestmark = pytest.mark.e2e

DOC = Path(__file__).resolve().parents[2] / "docs" / "scale-out.md"
VICTORIA = "/usr/bin/victoria-metrics"
PROMTOOL = "/usr/bin/promtool"


def doc_block(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", text, re.S)
    assert match, f"docs/scale-out.md has no {name} block"
    return match.group(1)


def prometheus_config(targets: list[str], victoria: str) -> str:
    """The documented config with the test's addresses and a 1 s scrape."""
    yaml = doc_block("prometheus-config").split("```yaml\n")[1].split("```")[0]
    yaml = re.sub(
        r"targets: \[.*\]", "targets: [" + ", ".join(f"'{t}'" for t in targets) + "]", yaml
    )
    yaml = yaml.replace("127.0.0.1:8428", victoria)
    yaml = yaml.replace("scrape_interval: 15s", "scrape_interval: 1s")
    return yaml.replace("scrape_timeout: 10s", "scrape_timeout: 1s")


def documented_queries() -> dict[str, str]:
    rows = re.findall(r"^\| ([^|]+?) \| `([^`]+)` \|$", doc_block("promql"), re.M)
    return dict(rows)


def victoria_command(data: Path) -> Callable[[int], list[str]]:
    def command(port: int) -> list[str]:
        vm = [VICTORIA, "-httpListenAddr", f"127.0.0.1:{port}", "-storageDataPath", str(data)]
        return [*vm, "-search.latencyOffset", "1s", "-search.disableCache"]

    return command


@contextlib.asynccontextmanager
async def victoria_and_prometheus(targets: list[str], tmp_path: Path) -> AsyncIterator[str]:
    """VictoriaMetrics, then Prometheus scraping ``targets`` and writing to it with the
    documented config (checked by promtool first); yields VictoriaMetrics' address."""
    vm_command = victoria_command(tmp_path / "vm")
    async with listening(vm_command, tmp_path / "vm.log", "/health") as (_, vm_port):
        vm_addr = f"127.0.0.1:{vm_port}"
        config = tmp_path / "prometheus.yml"
        config.write_text(prometheus_config(targets, vm_addr))
        check = await asyncio.create_subprocess_exec(
            PROMTOOL, "check", "config", str(config), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        checked, _ = await check.communicate()
        assert check.returncode == 0, checked.decode()
        prom_command = prometheus_command(config, tmp_path)
        async with listening(prom_command, tmp_path / "prom.log", "/-/ready"):
            yield vm_addr


def instant(base: str, expr: str) -> list[dict[str, Any]]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=5) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


async def value(base: str, expr: str) -> float | None:
    try:
        result = await asyncio.to_thread(instant, base, expr)
    except OSError:
        return None  # not listening yet
    return float(result[0]["value"][1]) if result else None


async def test_victoria_metrics_answers_fleet_wide_queries_over_all_shards(
    sharded: ShardedFleet, tmp_path: Path
) -> None:
    runtimes = [runtime for runtime, _ in sharded.running.values()]
    servers = [await start_metrics_endpoint("127.0.0.1:0", r, gzip=False) for r in runtimes]
    try:
        targets = [s.url.removeprefix("http://") for s in servers]
        async with victoria_and_prometheus(targets, tmp_path) as vm_addr:
            await wait_until(
                lambda: all(
                    (s := r.latest()) is not None
                    and all(EXPECTED_STATE[n.name] == n.state for n in s.nodes)
                    for r in runtimes
                ),
                60,
                "shards settled",
            )
            queries = documented_queries()
            assert len(queries) == 4
            base = f"http://{vm_addr}"
            expected = {
                "nodes in the fleet": float(len(EXPECTED_STATE)),
                "nodes broken or unreachable": 3.0,
                "GPUs healthy": float(sum(r.latest().gpus_healthy for r in runtimes)),  # type: ignore[union-attr]
            }
            assert expected["GPUs healthy"] == 8 + 7 + 8 + 8 + 0
            answers: dict[str, float | None] = {}

            async def documented_answers() -> bool:
                answers.update({q: await value(base, queries[q]) for q in queries})
                return all(answers[q] == v for q, v in expected.items())

            await wait_until_async(documented_answers, 60, lambda: repr(answers), every_s=0.5)
            assert {q: answers[q] for q in expected} == expected, answers
            # Shards publish no SLA of their own (their history is a part of the fleet's).
            assert await value(base, "count(gpufleet_sla_objective_percent)") is None
            util = answers["fleet GPU utilization, percent"]
            assert util is not None and 0 <= util <= 100
    finally:
        for server in servers:
            await server.stop()
