"""The running fleet asks the scheduler for job names and accounts on its own schedule.

- The demo's path: simulated nodes on loopback SSH run a simulated Slurm job through
  the real agent; the simulated login node answers ``squeue --json``; the runtime puts
  the job's name, account and the scheduler's user name on the node's snapshot.
- A job learned before the scheduler knew it: the next answer gives its node a new
  snapshot, and only that node (the identity contract).
- A login node that refuses or never answers: one notice per way of failing, the task
  keeps asking, ``stop()`` ends it cleanly.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.demo import start_demo_fleet
from collectors.protocol import Jobs, decode_line
from collectors.sim.jobs import SimulatedLoginNode
from collectors.ssh.options import SshOptions
from collectors.updates import NodeMessage
from fleet.model import FleetSnapshot
from fleet.settings.health_section import HealthSection
from fleet.settings.jobs_section import JobsSection
from fleet.state import FleetState, NodeSpec
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from ledger.jobs.login_node import ssh_runner
from ledger.jobs.scheduler_watch import SchedulerWatch
from testkit.loopback.recorder import eventually
from testkit.ports import free_port
from tui.node_tables import node_summary

SCENARIO = """
[[fault]]
kind = "job"
node = "node-001"
at = "0s"
id = 4242
user = "alice"
account = "nlp"
partition = "h100"
name = "llama-pretrain"
"""


def _described(snap: FleetSnapshot | None) -> set[tuple[int, str, str, str, str]]:
    node = None if snap is None else snap.node("node-001")
    return set() if node is None else {(i.gpu, i.job, i.name, i.account, i.user) for i in node.jobs}


async def test_the_demo_login_node_names_a_live_job_on_the_snapshot(tmp_path: Path) -> None:
    scenario = tmp_path / "jobs.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    demo = await start_demo_fleet(nodes=2, gpus=2, scenario=scenario, seed=1)
    try:
        sim = demo.loopback.simulation
        assert sim is not None
        login = SimulatedLoginNode(sim.scenario, sim.epoch, sim.gpus, list(demo.loopback.nodes))
        config = parse_config(
            {"fleet": {"hosts": [t.name for t in demo.targets], "interval": 0.5,
                       "slow_interval": 1.0}}
        )  # fmt: skip
        options = SshOptions(ssh_config=None, backoff_base=0.2, backoff_cap=1.0)
        runtime = FleetRuntime(
            config, demo.targets, data_dir=None, ssh_options=options, job_metadata=login
        )
        await runtime.start()
        try:
            wanted = {(g, "4242", "llama-pretrain", "nlp", "alice") for g in range(2)}
            await eventually(lambda: _described(runtime.latest()) == wanted, 90)
            latest = runtime.latest()
            assert latest is not None
            assert {(i.node, i.partition) for i in latest.jobs} == {("node-001", "h100")}
            node = latest.node("node-001")
            assert node is not None
            screen = node_summary(node, latest.taken_at).splitlines()
            assert screen[-1] == "jobs: 4242 llama-pretrain · alice · nlp/h100 · GPUs 0-1"
            assert login.asked == 1  # asked at start; the next ask is a minute later
        finally:
            await runtime.stop()
        assert runtime.scheduler is not None and runtime.scheduler.running is False
    finally:
        await demo.stop()


UUID = "GPU-00000000-1111-2222-3333-444444444444"


def _jobs_update(node: str, job: str) -> NodeMessage:
    body = {"type": "jobs", "v": 1, "t": 1.0, "schema": 1, "jobs": [
        {"gpu": 0, "uuid": UUID, "scheduler": "slurm", "job": job, "step": "0", "uid": 20001}
    ]}  # fmt: skip
    message = decode_line(json.dumps(body).encode())
    assert isinstance(message, Jobs)
    return NodeMessage(node, message, 100.0)


async def test_a_later_answer_renames_only_the_node_whose_job_it_names() -> None:
    answers = [b'{"jobs": []}']

    async def login_node(argv: object) -> bytes:
        return answers[-1]

    watch = SchedulerWatch(JobsSection(), login_node, clock=lambda: 100.0, note=lambda e: None)
    state = FleetState([NodeSpec("n1", 1), NodeSpec("n2", 1)], HealthSection())
    state.jobs = watch.jobs
    state.ingest(_jobs_update("n1", "41"))
    state.ingest(_jobs_update("n2", "77"))
    await watch.ask()
    before = state.snapshot(101.0)
    n1, n2 = before.node("n1"), before.node("n2")
    assert n1 is not None and [(i.job, i.name, i.user) for i in n1.jobs] == [("41", "", "20001")]

    answers.append(b'{"jobs": [{"job_id": 41, "name": "llama", "user_name": "alice",'
                   b' "account": "nlp", "partition": "h100"}]}')  # fmt: skip
    assert await watch.ask() == 1
    after = state.snapshot(102.0)
    renamed = after.node("n1")
    assert renamed is not None and [(i.name, i.account, i.user) for i in renamed.jobs] == [
        ("llama", "nlp", "alice")
    ]
    assert [(i.job, i.name) for i in after.jobs] == [("41", "llama"), ("77", "")]
    assert after.node("n2") is n2  # the answer taught nothing about n2's job
    assert await watch.ask() == 1  # the same answer again: nothing reads differently
    assert state.snapshot(103.0).node("n1") is after.node("n1")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word (a hung sshd)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


async def test_a_login_node_that_fails_is_noted_once_per_kind_and_stops_cleanly(
    silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    config = parse_config({"jobs": {"login_node": "127.0.0.1", "login_port": free_port()}})
    runtime = FleetRuntime(config, [], data_dir=None)
    watch = runtime.scheduler
    assert watch is not None, "a configured login node is asked"
    with caplog.at_level(logging.WARNING, logger="ledger.jobs.scheduler_watch"):
        await runtime.start()
        await eventually(lambda: watch.asks >= 1, 30)
        await watch.ask()  # refused again: said once
        assert watch.metadata.last_error_kind == "ssh"
        await runtime.stop()
    assert not watch.running
    notes = [e for e in runtime.desk.session.entries if e.kind == "jobs"]
    assert len(notes) == 1 and notes[0].node == "127.0.0.1" and notes[0].severity == "warn"
    assert notes[0].text.startswith("job metadata unavailable: 127.0.0.1:")
    assert len([r for r in caplog.records if "job metadata" in r.getMessage()]) == 1

    # A login node that accepts and then never answers: abandoned after query_timeout_s.
    section = JobsSection(login_node="127.0.0.1", login_port=silent_port, query_timeout_s=0.5)
    notes.clear()
    hung = SchedulerWatch(section, ssh_runner(section), lambda: 0.0, notes.append)
    hung.start()
    await eventually(lambda: hung.asks >= 1, 30)
    assert hung.metadata.last_error_kind == "timeout"
    assert [e.text for e in notes] == ["job metadata unavailable: no answer in time"]
    await hung.stop()  # asleep until the next ask: cancelled at once
    assert not hung.running
