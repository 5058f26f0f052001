"""Simulated Slurm jobs through the real path: simulated node on loopback SSH, the real
agent (cgroups and environ in the node's fake /proc), the controller's fleet state, and
the jobs history table on disk.

node-001 (4 GPUs) runs job 4242 (alice) on every GPU for the whole test and job 5150
(bob), idle, on GPU 3 until 10 s: the first is open in the live snapshot and in
``jobs/open.parquet``; the second ends, which the state hands over once as an ended
interval and the recorder writes into a day's partition.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

from collectors.demo import start_demo_fleet
from collectors.sim.jobs import UID_BASE
from collectors.ssh.options import SshOptions
from fleet.jobs import JobInterval
from fleet.model import FleetSnapshot
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from history.jobs import read_job_history
from testkit.loopback.recorder import eventually

SCENARIO = """
[[fault]]
kind = "job"
node = "node-001"
at = "0s"
id = 4242
user = "alice"
account = "nlp"

[[fault]]
kind = "job"
node = "node-001"
gpu = 3
at = "0s"
until = "10s"
id = 5150
user = "bob"
idle = true
"""


def _uid(user: str) -> str:
    return str(UID_BASE + zlib.crc32(user.encode()) % 10_000)  # collectors/sim/jobs.py


def _jobs(snap: FleetSnapshot | None) -> set[tuple[str, int, str]]:
    return set() if snap is None else {(i.node, i.gpu, i.job) for i in snap.jobs}


async def test_a_simulated_job_reaches_the_snapshot_and_the_jobs_table(tmp_path: Path) -> None:
    scenario = tmp_path / "jobs.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    data_dir = tmp_path / "history"
    data_dir.mkdir()
    demo = await start_demo_fleet(nodes=2, gpus=4, scenario=scenario, seed=1)
    ended: list[JobInterval] = []
    try:
        config = parse_config(
            {"fleet": {"hosts": [t.name for t in demo.targets], "interval": 0.5,
                       "slow_interval": 1.0},
             "history": {"flush_interval_s": 1.0}}
        )  # fmt: skip
        options = SshOptions(ssh_config=None, backoff_base=0.2, backoff_cap=1.0)
        # An idle allocation is found by the walk of every process, every 60 s by default:
        # every 2 s here, so the idle job's end is seen within seconds of its ``until``.
        targets = [replace(t, agent_args=(*t.agent_args, "--jobs-scan", "2")) for t in demo.targets]
        runtime = FleetRuntime(config, targets, data_dir=data_dir, ssh_options=options)
        runtime.subscribe(lambda snap: ended.extend(snap.ended_jobs))
        await runtime.start()
        try:
            everything = {("node-001", g, "4242") for g in range(4)} | {("node-001", 3, "5150")}
            await eventually(lambda: _jobs(runtime.latest()) == everything, 90)
            latest = runtime.latest()
            assert latest is not None
            node = latest.node("node-001")
            assert node is not None and {i.job for i in node.jobs} == {"4242", "5150"}
            # The node has no passwd entry for the jobs' users: it names their uids; the
            # names come from the scheduler (docs/jobs.md).
            assert {i.user for i in node.jobs} == {_uid("alice"), _uid("bob")}
            await eventually(lambda: ("node-001", 3, "5150") not in _jobs(runtime.latest()), 90)
            assert [(i.gpu, i.job) for i in ended] == [(3, "5150")]
            assert ended[0].end is not None
        finally:
            await runtime.stop()
    finally:
        await demo.stop()
    table = read_job_history(data_dir)
    rows = {(r["gpu"], r["job"], r["user"], r["end"] is None) for r in table.iter_rows(named=True)}
    alice, bob = _uid("alice"), _uid("bob")
    assert rows == {(g, "4242", alice, True) for g in range(4)} | {(3, "5150", bob, False)}
    assert list((data_dir / "jobs").glob("date=*/*.parquet")), "the ended job has its partition"
