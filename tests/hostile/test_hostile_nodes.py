"""Hostile agents over real loopback SSH: one node's garbage costs that node only.

Four nodes run the same agent program (a real process under ``/bin/sh`` on an
asyncssh server): ``good`` reports XID 48, ``bad`` sends the issue's minimal line
(``gpu`` -1), ``evil`` names its GPU with OSC 52 / OSC 0 / CSI / RLO sequences and
``crash`` writes escape sequences and 100 kB to stderr and exits.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import pytest

from fleet.model import FleetSnapshot
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from tests.hostile.agents import hostile_agent
from tests.hostile.shellnode import options_with_agent, shell_fleet
from tests.runtime.waits import wait_for_snapshot

ROLES = ["good", "bad", "evil", "crash"]


def _status(snap: FleetSnapshot, name: str) -> tuple[str, str]:
    node = snap.node(name)
    assert node is not None
    return node.status, node.status_reason


def _seen_everything(snap: FleetSnapshot) -> bool:
    good, evil = snap.node("good"), snap.node("evil")
    return (
        good is not None
        and any(e.code == 48 for e in good.events)
        and evil is not None
        and any(e.code == 13 for e in evil.events)
        and _status(snap, "bad")[0] == "protocol-error"
        and _status(snap, "crash")[0] == "agent-error"
    )


def _clean(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\x07\x9b\u202e\n")


async def test_hostile_nodes_cost_only_themselves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.WARNING, logger="asyncssh")
    config = parse_config({"fleet": {"hosts": ROLES, "interval": 0.2, "slow_interval": 1.0}})
    async with shell_fleet(ROLES, tmp_path) as fleet:
        targets = [fleet.target(role, agent_args=("--role", role)) for role in ROLES]
        data = tmp_path / "data"
        runtime = FleetRuntime(
            config, targets, data_dir=data, ssh_options=options_with_agent(hostile_agent())
        )
        await runtime.start()
        try:
            snap = await wait_for_snapshot(runtime, _seen_everything)
        finally:
            await runtime.stop()

    # The good node's XID 48 is on disk, in real parquet, beside the evil node's event.
    events = pl.read_parquet(list((data / "events").rglob("*.parquet")))
    good = events.filter(pl.col("node") == "good")
    assert good.filter(pl.col("code") == 48).height >= 1
    assert events.filter(pl.col("node") == "bad").filter(pl.col("gpu").is_null()).height == 0
    assert all(_clean(detail) for detail in events["detail"].to_list())

    # Nothing a node wrote reaches the snapshot raw; the escapes are shown, not run.
    evil = snap.node("evil")
    assert evil is not None and evil.gpus
    assert _clean(evil.gpus[0].name) and "\\x1b]52;c;aGFja2Vk\\x07" in evil.gpus[0].name
    assert _clean(evil.driver or "") and _clean(evil.agent_version or "")
    assert all(_clean(e.detail) for e in evil.events)
    status, reason = _status(snap, "crash")
    assert _clean(reason) and "\\x1b]52" in reason and len(reason) <= 1000
    status, reason = _status(snap, "bad")
    assert status == "protocol-error" and "$.gpu" in reason

    # One log line for the bad node's repeated error, and no traceback anywhere.
    protocol_lines = [r for r in caplog.records if "protocol error" in r.getMessage()]
    assert len(protocol_lines) == 1 and "bad" in protocol_lines[0].getMessage()
    assert [r for r in caplog.records if r.exc_info] == []
    assert not [r for r in caplog.records if "tick failed" in r.getMessage()]
