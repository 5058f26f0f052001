"""A GPU swap through the real path: simulated node on loopback SSH, real agent, controller,
history on disk, then the repairs ledger read from that history.

The scenario fails GPU 2 of node-001 (XID 79) and swaps the board (``recover`` with
``new_uuid``). The loopback fleet power-cycles the node at the swap, so the controller
reconnects, the agent's new hello carries the new UUID and serial, drift records a
``gpu_swap`` and the ledger's record for the outage says so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from collectors.demo import start_demo_fleet
from collectors.ssh.options import SshOptions
from fleet.model import FleetSnapshot
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from ledger.repairs.ledger import compute
from testkit.loopback.recorder import eventually

SCENARIO = """
[[fault]]
kind = "xid79"
node = "node-001"
gpu = 2
at = "8s"

[[fault]]
kind = "recover"
node = "node-001"
gpu = 2
at = "11s"
new_uuid = true
"""


def _uuid(snap: FleetSnapshot | None, node: str, gpu: int) -> str | None:
    if snap is None:
        return None
    for n in snap.nodes:
        if n.name == node and len(n.gpus) > gpu:
            return n.gpus[gpu].uuid
    return None


async def test_a_swap_is_a_power_cycle_and_a_gpu_swap_repair(tmp_path: Path) -> None:
    scenario = tmp_path / "swap.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    data_dir = tmp_path / "history"
    data_dir.mkdir()
    started = datetime.now(UTC)
    demo = await start_demo_fleet(nodes=2, gpus=4, scenario=scenario, seed=1)
    try:
        config = parse_config(
            {"fleet": {"hosts": [t.name for t in demo.targets], "interval": 0.5},
             "history": {"flush_interval_s": 1.0}}
        )  # fmt: skip
        options = SshOptions(ssh_config=None, backoff_base=0.2, backoff_cap=1.0)
        runtime = FleetRuntime(config, demo.targets, data_dir=data_dir, ssh_options=options)
        await runtime.start()
        try:
            # The agent must say hello before the fault: a GPU lost at hello has no identity.
            await eventually(lambda: bool(_uuid(runtime.latest(), "node-001", 2)), 60)
            before = _uuid(runtime.latest(), "node-001", 2)
            simulation = demo.loopback.simulation
            assert simulation is not None
            assert simulation.elapsed < 8, "the agent said hello after the fault: no identity"
            await eventually(
                lambda: _uuid(runtime.latest(), "node-001", 2) not in (None, "", before), 60
            )
            await eventually(
                lambda: all(
                    n.state == "up" for n in (runtime.latest() or FleetSnapshot(0, ())).nodes
                ),
                60,
            )
        finally:
            await runtime.stop()
    finally:
        await demo.stop()
    led = compute(data_dir, started - timedelta(minutes=1), datetime.now(UTC), None)
    (record,) = [r for r in led.records if r.node == "node-001"]
    assert record.kind == "gpu_swap"
    assert record.resolved_ms is not None
    assert record.gpus == (2,)
    assert record.serials == (before,)
    action = record.first_action
    assert action is not None and action.kind == "gpu_swap" and action.gpu == 2
    assert record.detected_ms <= action.at_ms <= record.resolved_ms + 60_000
