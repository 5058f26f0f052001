"""A dead shard is the monitor's gap: three ``serve --shard`` processes on a real
nats-server, one SIGKILLed and one SIGSTOPped. Its nodes turn ``unmonitored`` with the
cause "shard K/N silent", in the view and in the cross-shard ledger's monitor gaps; no
GPU of theirs counts as unhealthy; the other shards' nodes stay watched and covered.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats
from fleet.model import FleetSnapshot
from gpufleet.demo_shards import shard_processes
from gpufleet.shard import write_targets_file
from testkit.loopback.fleet import LoopbackFleet
from tests.cluster.conftest import EXPECTED_STATE, INTERVAL
from tests.cluster.test_same_fleet_e2e import until

pytestmark = pytest.mark.e2e

# With 3 shards: node-004 is shard 1's, node-001..003 shard 2's, node-005 shard 3's.
SHARD_1, SHARD_2 = {"node-004"}, {"node-001", "node-002", "node-003"}


def shard_config(url: str) -> str:
    return (
        f'[fleet]\nhosts = ["node-[001-005]"]\ninterval = {INTERVAL}\nslow_interval = 1.0\n'
        "\n[sla]\ncommitted_nodes = 5\ngpu_hour_price = 2\ngrace_minutes = 0\n"
        "tiers = [{ below = 99.5, credit_percent = 10 }]\n"
        f"\n[cluster]\nnats_url = {json.dumps(url)}\n"
    )


def silent(nodes: set[str], cause: str) -> Callable[[FleetSnapshot], bool]:
    def check(snapshot: FleetSnapshot) -> bool:
        shown = {n.name: n for n in snapshot.nodes}
        return all(
            shown[name].status == "unmonitored" and shown[name].status_reason.startswith(cause)
            for name in nodes
        )

    return check


def watched(snapshot: FleetSnapshot) -> bool:
    return {n.name: n.state for n in snapshot.nodes} == EXPECTED_STATE and all(
        n.status != "unmonitored" for n in snapshot.nodes
    )


def now_ms() -> int:
    return round(time.time() * 1000)


def gap_causes(viewer: AttachedFleet, since_ms: int) -> set[str]:
    """Causes of the ledger's monitor gaps since ``since_ms`` (shards start one after
    another: a later one's first seconds are a gap of their own)."""
    return {g.cause for g in viewer.sla.inputs().gaps if g.end_ms > since_ms}


def unmonitored_nodes(viewer: AttachedFleet, since_ms: int) -> dict[str, set[str]]:
    """The ledger's unmonitored nodes since ``since_ms``, with their causes (before it,
    nodes were connecting, and a shard started later than another was silent)."""
    out: dict[str, set[str]] = {}
    for interval in viewer.sla.inputs().intervals:
        ended = interval.end_ms is not None and interval.end_ms <= since_ms
        if interval.state == "unmonitored" and not ended:
            out.setdefault(interval.node, set()).update(interval.reasons)
    return out


async def test_a_killed_and_a_stopped_shard_leave_only_their_nodes_unmonitored(
    loopback: LoopbackFleet, nats_server: LocalNats, tmp_path: Path
) -> None:
    config = tmp_path / "shard.toml"
    # The gap itself, before any shard takes the silent one's nodes (test_takeover_e2e).
    config.write_text(shard_config(nats_server.url) + "takeover_after_s = 0\n")
    targets = tmp_path / "targets.json"
    write_targets_file(targets, loopback.targets(interval=INTERVAL, slow_interval=1.0))
    data = tmp_path / "data"
    data.mkdir()
    viewer = AttachedFleet(nats_server.url, tick_s=INTERVAL, sla_refresh_s=1.0)
    async with shard_processes([config] * 3, targets, data) as shards:
        await viewer.start()
        try:
            await until(viewer, watched, 120)
            # And the ledgers the view holds have every node past connecting.
            await until(viewer, lambda _: not unmonitored_nodes(viewer, now_ms()), 30)
            healthy_before = viewer.latest().gpus_healthy  # type: ignore[union-attr]

            killed_ms = now_ms()
            shards[0].send_signal(signal.SIGKILL)  # shard 1: node-004
            await until(viewer, silent(SHARD_1, "shard 1/3 silent"), 30)
            snapshot = viewer.latest()
            assert snapshot is not None
            assert snapshot.gpus_unmonitored == 8 and snapshot.gpus_total == 32
            # node-004 was broken by its port, its GPUs healthy: now neither.
            assert snapshot.gpus_healthy == healthy_before - 8
            await until(viewer, lambda _: "shard 1/3 silent" in gap_causes(viewer, killed_ms), 30)
            assert unmonitored_nodes(viewer, killed_ms) == {"node-004": {"shard 1/3 silent"}}

            os.kill(shards[1].pid, signal.SIGSTOP)  # shard 2: node-001..003, frozen
            try:
                await until(viewer, silent(SHARD_2, "shard 2/3 silent"), 30)
                assert viewer.latest().node("node-005").status != "unmonitored"  # type: ignore[union-attr]
                await until(
                    viewer, lambda _: "shard 2/3 silent" in gap_causes(viewer, killed_ms), 30
                )
                blind = unmonitored_nodes(viewer, killed_ms)
                assert blind == {
                    "node-004": {"shard 1/3 silent"},
                    **{name: {"shard 2/3 silent"} for name in SHARD_2},
                }
            finally:
                os.kill(shards[1].pid, signal.SIGCONT)
            # Thawed, it publishes again: its nodes are watched as before.
            await until(
                viewer,
                lambda s: not any(n.name in SHARD_2 and n.status == "unmonitored" for n in s.nodes),
                30,
            )
        finally:
            await viewer.stop()
