"""Takeover in a signed fleet: with a signing key per shard and a viewer given their
public keys, a SIGKILLed shard's node is shown from its adopter (the adopter's envelope
says it stands in for the silent shard, and the viewer hears nothing from that shard
either), and from its own shard again once that one is restarted."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats
from cluster.signing import ShardKeys, parse_public_key, private_key_pem, public_key_text
from gpufleet.demo_shards import shard_processes
from gpufleet.shard import write_targets_file
from testkit.loopback.fleet import LoopbackFleet
from tests.cluster.conftest import INTERVAL
from tests.cluster.test_dead_shard import shard_config, watched
from tests.cluster.test_same_fleet_e2e import until
from tests.cluster.test_takeover_e2e import (
    SHARD_1,
    TAKEOVER_AFTER_S,
    adopters,
    from_adopters,
    start_shard,
)

pytestmark = pytest.mark.e2e


async def test_a_signed_viewer_shows_an_adopted_node_from_its_adopter(
    loopback: LoopbackFleet, nats_server: LocalNats, tmp_path: Path
) -> None:
    keys = [Ed25519PrivateKey.generate() for _ in range(3)]
    public = json.dumps([public_key_text(k) for k in keys])
    configs = []
    for k, key in enumerate(keys, start=1):
        key_file = tmp_path / f"shard-{k}.pem"
        key_file.write_bytes(private_key_pem(key))
        config = tmp_path / f"shard-{k}.toml"
        config.write_text(
            shard_config(nats_server.url)
            + f"takeover_after_s = {TAKEOVER_AFTER_S}\n"
            + f"signing_key_file = {json.dumps(str(key_file))}\nshard_public_keys = {public}\n"
        )
        configs.append(config)
    targets = tmp_path / "targets.json"
    write_targets_file(targets, loopback.targets(interval=INTERVAL, slow_interval=1.0))
    data = tmp_path / "data"
    data.mkdir()
    viewer_keys = ShardKeys([parse_public_key(public_key_text(k)) for k in keys])
    viewer = AttachedFleet(nats_server.url, tick_s=INTERVAL, keys=viewer_keys)
    restarted = None
    async with shard_processes(configs, targets, data) as shards:
        await viewer.start()
        try:
            await until(viewer, watched, 120)
            await until(viewer, from_adopters(viewer, {"node-004": 1}), 60)
            viewer_keys.dropped.clear()  # shards start one after another: churn before
            placed = adopters(SHARD_1, 1)
            shards[0].send_signal(signal.SIGKILL)
            await until(viewer, from_adopters(viewer, placed), 60)
            # The adopter's node was taken as it came: nothing of it dropped.
            assert viewer.dropped["node not the shard's"] == 0
            restarted = await start_shard(1, configs[0], targets, data)
            await until(viewer, from_adopters(viewer, {"node-004": 1}), 60)
        finally:
            await viewer.stop()
            if restarted is not None:
                restarted.terminate()
                await restarted.wait()
