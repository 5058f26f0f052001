"""A dead shard blinds only its own nodes in the SLA ledger (per-node coverage)."""

from __future__ import annotations

import zipfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from cluster.history import history_root
from cluster.node_coverage import ShardHistory, intervals_across_shards, node_gaps, shard_gaps
from cluster.shards import ShardSpec
from gpufleet.cli import main
from gpufleet.config import parse_config
from gpufleet.shard import shard_data_dir
from history.gaps import MonitorGap, load_gaps
from history.states import StateInterval
from ledger.sla.report import build_report, to_json
from testkit.synthetic_history import node_name
from tests.cluster.recorded import T0, fleet_ticks, record, record_then_die

NODES = 6
SECONDS = 660
DEAD = ShardSpec(2, 3)
STOPPED_AT, RESTARTED_AT = 200, 400  # shard 2 records ticks [0, 200) and [400, 660)


def claim(data_dir: Path) -> dict[str, Any]:
    contract = parse_config(
        {"sla": {"committed_nodes": NODES, "gpu_hour_price": 2, "grace_minutes": 1}}
    ).sla
    assert contract is not None
    with history_root(data_dir) as root:
        return to_json(build_report(root, contract, "2026-10", T0 + 700))


def outages_of(report: dict[str, Any], nodes: set[str]) -> list[tuple[str, str, str]]:
    return [(o["node"], o["start"], o["end"]) for o in report["outages"] if o["node"] in nodes]


@pytest.mark.parametrize(
    ("killed", "restarted"),
    [(False, True), (True, True), (False, False)],
    ids=["stopped-restarted", "killed-restarted", "stopped-still-dead"],
)
def test_a_stopped_shard_leaves_only_its_own_nodes_unmonitored(
    tmp_path: Path, killed: bool, restarted: bool
) -> None:
    ticks = fleet_ticks(NODES, SECONDS)
    record(tmp_path / "one", ticks, None)
    for k in (1, 2, 3):
        spec = ShardSpec(k, 3)
        shard_dir = shard_data_dir(tmp_path / "three", spec)
        if spec != DEAD:
            record(shard_dir, ticks, spec)
            continue
        if killed:  # a real process, SIGKILLed: its intervals are left open on disk
            record_then_die(shard_dir, STOPPED_AT, spec)
        else:
            record(shard_dir, ticks[:STOPPED_AT], spec)
        if restarted:  # the same directory again: the recorder resumes its intervals
            record(shard_dir, ticks[RESTARTED_AT:], spec)
    one, three = claim(tmp_path / "one"), claim(tmp_path / "three")
    with history_root(tmp_path / "three") as root:
        causes = {g.cause for g in load_gaps(root, date(2026, 10, 1), date(2026, 10, 31))}
    assert causes == {f"shard {DEAD.index}/3 silent"}

    names = {node_name(n) for n in range(NODES)}
    dead = {n for n in names if DEAD.owns(n)}
    alive = names - dead
    assert dead and alive
    # The fleet was monitored while any shard recorded: the whole scenario.
    assert three["monitored_seconds"] == one["monitored_seconds"]
    # From its last tick to its first again, or to the last tick of the fleet.
    blind_s = (RESTARTED_AT if restarted else SECONDS - 1) - (STOPPED_AT - 1)
    assert three["unmonitored_node_seconds"] == len(dead) * blind_s
    assert one["unmonitored_node_seconds"] == 0
    for node in alive:
        assert three["coverage_by_node"][node] == one["coverage_by_node"][node]
    for node in dead:
        lost = blind_s / three["period_seconds"] * 100
        assert three["coverage_by_node"][node] == pytest.approx(
            one["coverage_by_node"][node] - lost
        )
    # The live shards' nodes are judged exactly as one collector judges them.
    assert outages_of(three, alive) == outages_of(one, alive)
    assert outages_of(one, alive), "the scenario must put an outage on a live shard"


def spans(rows: list[StateInterval]) -> list[tuple[str, str, int, int | None]]:
    return [(r.node, r.state, r.start_ms, r.end_ms) for r in rows]


def test_shards_that_never_missed_give_their_intervals_back_unchanged() -> None:
    a = ShardHistory("shard=1", [(0, 100)], [StateInterval("n1", "up", 0, None)])
    b = ShardHistory("shard=2", [(0, 100)], [StateInterval("n2", "broken", 10, 50)])
    assert spans(intervals_across_shards([a, b])) == [
        ("n1", "up", 0, None),
        ("n2", "broken", 10, 50),
    ]


def test_an_open_interval_is_cut_where_its_shard_stopped_and_resumes_after() -> None:
    a = ShardHistory("shard=1", [(0, 100)], [StateInterval("n1", "up", 0, None)])
    b = ShardHistory("shard=2", [(0, 30), (60, 100)], [StateInterval("n2", "broken", 10, None)])
    got = intervals_across_shards([a, b])
    assert spans(got) == [
        ("n1", "up", 0, None),
        ("n2", "broken", 10, 30),
        ("n2", "unmonitored", 30, 60),
        ("n2", "broken", 60, None),
    ]
    assert got[2].reasons == ("shard 2/2 silent",)
    assert intervals_across_shards([a, b], count=3)[2].reasons == ("shard 2/3 silent",)


def test_a_silent_shard_is_a_monitor_gap_with_its_cause_inside_the_fleets_time() -> None:
    a = ShardHistory("shard=1", [(0, 100)])
    b = ShardHistory("shard=2", [(0, 30), (60, 90)])
    c = ShardHistory("shard=3", [(10, 120)])
    assert shard_gaps([a, b, c]) == [
        MonitorGap(0, 10, "shard 3/3 silent"),
        MonitorGap(30, 60, "shard 2/3 silent"),
        MonitorGap(90, 120, "shard 2/3 silent"),
        MonitorGap(100, 120, "shard 1/3 silent"),
    ]


def test_a_node_that_moved_shards_is_covered_by_either() -> None:
    a = ShardHistory("shard=1", [(0, 50)], [StateInterval("n1", "up", 0, 50)])
    b = ShardHistory("shard=2", [(40, 100)], [StateInterval("n1", "up", 50, None)])
    c = ShardHistory("shard=3", [(0, 120)], [StateInterval("n3", "up", 0, None)])
    gaps = node_gaps([a, b, c])
    assert gaps["n1"] == ([(100, 120)], ("shard=1", "shard=2"))
    assert gaps["n3"] == ([], ("shard=3",))


def test_the_evidence_bundle_of_a_sharded_history_holds_every_shards_records(
    tmp_path: Path,
) -> None:
    ticks = fleet_ticks(NODES, SECONDS)
    for k in (1, 2, 3):
        record(shard_data_dir(tmp_path / "three", ShardSpec(k, 3)), ticks, ShardSpec(k, 3))
    config = tmp_path / "contract.toml"
    config.write_text("[sla]\ncommitted_nodes = 6\ngpu_hour_price = 2\ngrace_minutes = 1\n")
    bundle = tmp_path / "claim.zip"
    args = ["sla", "-c", str(config), "--data-dir", str(tmp_path / "three"), "--month", "2026-10"]
    assert main([*args, "--bundle", str(bundle)]) == 0
    with zipfile.ZipFile(bundle) as z:
        intervals = z.read("evidence/state_intervals.csv").decode().splitlines()
    # The outage nodes' transitions, read from their shards' folders (not from DATA).
    assert any(node_name(1) in line and "broken" in line for line in intervals[1:])
    assert any(node_name(4) in line and "unreachable" in line for line in intervals[1:])
