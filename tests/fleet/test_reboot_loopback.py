"""A reboot and a replaced node through the real path: simulated nodes on loopback SSH
(power-cycled by the demo at each), the real agent's hello with the node's boot id and
machine id, and drift's ``reboot`` and ``node_replaced`` events in the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from collectors.demo import start_demo_fleet
from collectors.sim.identity import boot_id, machine_id
from collectors.ssh.options import SshOptions
from fleet.model import EventRecord, FleetSnapshot
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from history.reader import HistoryReader
from testkit.loopback.recorder import eventually

SEED = 1
# The first hello comes 1-2 s after the start on an idle machine: 10 s leaves room for a
# loaded one, and the elapsed-time assertion below says so when it was not enough.
SCENARIO = """
[[fault]]
kind = "reboot"
node = "node-001"
at = "10s"

[[fault]]
kind = "node_replaced"
node = "node-002"
at = "12s"
"""


def _booted(snap: FleetSnapshot | None) -> bool:
    return snap is not None and len(snap.nodes) == 2 and all(n.boot_id for n in snap.nodes)


async def test_reboot_and_node_replaced_come_from_the_nodes_identity(tmp_path: Path) -> None:
    scenario = tmp_path / "boots.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    data_dir = tmp_path / "history"
    data_dir.mkdir()
    demo = await start_demo_fleet(nodes=2, gpus=2, scenario=scenario, seed=SEED)
    seen: list[EventRecord] = []
    try:
        config = parse_config(
            {"fleet": {"hosts": [t.name for t in demo.targets], "interval": 0.5},
             "history": {"flush_interval_s": 1.0}}
        )  # fmt: skip
        options = SshOptions(ssh_config=None, backoff_base=0.2, backoff_cap=1.0)
        runtime = FleetRuntime(config, demo.targets, data_dir=data_dir, ssh_options=options)
        runtime.subscribe(
            lambda snap: seen.extend(
                e for e in snap.new_events if e.kind in ("reboot", "node_replaced")
            )
        )
        await runtime.start()
        try:
            await eventually(lambda: _booted(runtime.latest()), 60)
            simulation = demo.loopback.simulation
            assert simulation is not None
            assert simulation.elapsed < 10, "the first hello came after the reboot"
            first = runtime.latest()
            assert first is not None
            node1 = first.node("node-001")
            assert node1 is not None
            assert (node1.boot_id, node1.machine_id) == (
                boot_id(SEED, "node-001", 0),
                machine_id(SEED, "node-001", 0),
            )
            await eventually(lambda: {e.node for e in seen} == {"node-001", "node-002"}, 90)
        finally:
            await runtime.stop()
    finally:
        await demo.stop()
    assert sorted((e.node, e.kind, e.detail) for e in seen) == [
        ("node-001", "reboot",
         f"boot id {boot_id(SEED, 'node-001', 0)} -> {boot_id(SEED, 'node-001', 1)}"),
        ("node-002", "node_replaced",
         f"machine id {machine_id(SEED, 'node-002', 0)} -> {machine_id(SEED, 'node-002', 1)}"),
    ]  # fmt: skip
    today = datetime.now(UTC).date()
    recorded = HistoryReader(data_dir).events(today - timedelta(days=1), today)
    assert set(recorded.filter(recorded["kind"].is_in(["reboot", "node_replaced"]))["node"]) == {
        "node-001",
        "node-002",
    }
