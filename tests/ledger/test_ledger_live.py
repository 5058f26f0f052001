"""The ledger with a real controller watching nodes over real SSH on loopback.

Restarts add no downtime, a node's outage is counted for what it was and nothing else
is, a mass loss is disputed, and a stopped history reads the same whenever it is read.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from collectors.ssh.options import SshOptions
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from history.reader import load_events, load_intervals
from ledger.sla import sla_for_month
from ledger.sla.bundle import bundle_files
from ledger.sla.render import render_html, render_markdown
from ledger.sla.report import build_report, to_json
from ledger.sla.section import SlaSection
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_for_snapshot

INTERVAL = 0.5
FAST_RETRY = SshOptions(backoff_base=0.25, backoff_cap=0.5, connect_timeout=5.0)


def contract(nodes: int, **overrides: object) -> SlaSection:
    base: dict[str, object] = {"committed_nodes": nodes, "gpu_hour_price": 2, "grace_minutes": 0}
    return SlaSection.model_validate(base | overrides)


def runtime_for(lf: LoopbackFleet, data_dir: Path) -> FleetRuntime:
    names = list(lf.nodes)
    config = parse_config(
        {"fleet": {"hosts": names, "interval": INTERVAL}, "history": {"flush_interval_s": 1.0}}
    )
    targets = lf.targets(interval=INTERVAL, slow_interval=1.0)
    return FleetRuntime(config, targets, data_dir=data_dir, ssh_options=FAST_RETRY)


def month_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


async def watch_until_all_up(lf: LoopbackFleet, data_dir: Path) -> None:
    runtime = runtime_for(lf, data_dir)
    await runtime.start()
    try:
        # A tick before any connection attempt concluded, as on a busy controller.
        connecting = runtime.tick()
        assert {n.status for n in connecting.nodes} == {"connecting"}
        await wait_for_snapshot(runtime, lambda s: all(n.state == "up" for n in s.nodes), 60)
    finally:
        await runtime.stop()


async def test_a_restart_on_the_same_data_directory_adds_no_downtime(tmp_path: Path) -> None:
    """Grace 0: the seconds each start spends connecting are unmonitored, not down."""
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=3, gpus=8, mode="canned") as lf:
        await watch_until_all_up(lf, data)
        await watch_until_all_up(lf, data)
    states = {(i.node, i.state) for i in load_intervals(data)}
    assert {s for _, s in states} == {"unmonitored", "up"}  # each start connects first
    result = sla_for_month(data, contract(3), month_now(), time.time())
    assert result.down_node_ms == 0 and result.outages == ()
    assert result.availability_pct == 100
    assert result.unmonitored_ms > 0  # the connecting seconds left the denominator


async def test_a_node_unreachable_for_a_while_is_counted_for_that_and_nothing_else(
    tmp_path: Path,
) -> None:
    """Scenario ``node_unreachable`` for 6 s: one counted outage of node-002 of about 6 s."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(
        'gpus = 8\n[[fault]]\nkind = "node_unreachable"\nnode = "node-002"\n'
        'at = "5s"\nuntil = "11s"\n'
    )
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=3, gpus=8, mode="canned", scenario=scenario) as lf:
        runtime = runtime_for(lf, data)
        await runtime.start()
        try:
            # Up first: before its first sample a node reads unreachable too.
            await wait_for_snapshot(runtime, lambda s: all(n.state == "up" for n in s.nodes), 60)
            await wait_for_snapshot(
                runtime,
                lambda s: s.node("node-002").state == "unreachable",
                60,  # type: ignore[union-attr]
            )
            await wait_for_snapshot(runtime, lambda s: all(n.state == "up" for n in s.nodes), 60)
        finally:
            await runtime.stop()
    result = sla_for_month(data, contract(3), month_now(), time.time())
    (outage,) = result.outages
    assert outage.node == "node-002" and outage.counted and outage.states == ("unreachable",)
    # Down from the dropped connection until the first sample after it: the 6 s of the
    # fault plus at most a retry delay, a handshake and a tick or two.
    assert 5.0 <= outage.minutes * 60 <= 10.0
    assert result.down_node_ms == outage.end_ms - outage.start_ms
    assert not outage.ongoing and result.disputed == ()
    # Every failed attempt is evidence, with its time and error, and lands in the bundle.
    today = datetime.now(UTC).date()
    events = load_events(data, today - timedelta(days=1), today)
    attempts = events.filter(pl.col("kind") == "connect_failed")
    assert set(attempts["node"]) == {"node-002"} and attempts.height >= 1
    assert all(attempts["detail"].str.len_chars() > 0)
    files = bundle_files(build_report(data, contract(3), month_now(), time.time()), data)
    rows = files["evidence/connection_attempts.csv"].decode().splitlines()
    assert rows[0] == "ts,node,error" and len(rows) == attempts.height + 1
    assert all(",node-002," in row for row in rows[1:])


async def test_mass_unreachability_is_disputed_not_down(tmp_path: Path) -> None:
    """3 of 4 nodes lost at once, no witness failing: disputed, nothing counted unless
    the contract says disputed time counts."""
    faults = "".join(
        f'[[fault]]\nkind = "node_unreachable"\nnode = "node-00{n}"\nat = "5s"\nuntil = "9s"\n'
        for n in (1, 2, 3)
    )
    scenario = tmp_path / "scenario.toml"
    scenario.write_text("gpus = 8\n" + faults)
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=4, gpus=8, mode="canned", scenario=scenario) as lf:
        runtime = runtime_for(lf, data)
        await runtime.start()
        try:
            # Up first: before its first sample a node counts as broken too, so "three
            # broken" alone can be met at start-up, before the fault.
            await wait_for_snapshot(runtime, lambda s: all(n.state == "up" for n in s.nodes), 60)
            await wait_for_snapshot(runtime, lambda s: s.nodes_broken >= 3, 60)
            await wait_for_snapshot(runtime, lambda s: all(n.state == "up" for n in s.nodes), 60)
        finally:
            await runtime.stop()
    now = time.time()
    result = sla_for_month(data, contract(4), month_now(), now)
    assert sorted(o.node for o in result.disputed) == ["node-001", "node-002", "node-003"]
    assert result.outages == () and result.down_node_ms == 0
    assert result.disputed_ms > 0
    counted = sla_for_month(data, contract(4, disputed_counts_as_down=True), month_now(), now)
    assert sorted(o.node for o in counted.outages if o.counted) == [
        "node-001",
        "node-002",
        "node-003",
    ]
    assert counted.down_node_ms > 0 and counted.disputed_ms == 0


async def test_reports_of_a_stopped_history_are_identical(tmp_path: Path) -> None:
    """An outage open when the controller stopped ends at its last observation, for good."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(
        'gpus = 8\n[[fault]]\nkind = "node_unreachable"\nnode = "node-001"\nat = "4s"\n'
    )
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=2, gpus=8, mode="canned", scenario=scenario) as lf:
        runtime = runtime_for(lf, data)
        await runtime.start()
        try:
            await wait_for_snapshot(
                runtime,
                lambda s: s.node("node-001").state == "unreachable",
                60,  # type: ignore[union-attr]
            )
        finally:
            await runtime.stop()
    now = time.time()
    first = build_report(data, contract(2), month_now(), now)
    later = build_report(data, contract(2), month_now(), now + 1200)  # 20 minutes later
    assert json.dumps(to_json(first)) == json.dumps(to_json(later))
    assert render_markdown(first) == render_markdown(later)
    assert render_html(first) == render_html(later)
    (outage,) = first.result.outages
    assert not outage.ongoing
    assert outage.end_ms <= round(now * 1000)
    assert "(ongoing)" not in render_markdown(first)
