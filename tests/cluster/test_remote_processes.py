"""The node screen's processes through NATS: two `gpufleet serve --shard K/2` processes
over simulated nodes (SSH on loopback), a real nats-server with users, and a read-only
viewer attached through NATS only.

The viewer's listing of each node is what the shard's runtime reads from that node
(``collectors.ssh.processes.request_processes``, here over a session of the test's
own), and the simulator's jobs say which processes those are; a shard asked about a
node it does not collect refuses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cluster.attach import AttachedFleet
from cluster.auth import NatsAuth
from cluster.bus import connect
from cluster.nats_users import authorization_block, hash_password, shard_user, viewer_user
from cluster.natsd import LocalNats, start_nats_server
from cluster.process_wire import decode_answer
from cluster.shards import owner
from cluster.wire import request_subject
from collectors.process_list import ProcessListing
from collectors.sim.procfs import job_command
from collectors.sim.workload import NodeWorkload
from collectors.ssh import SshFleet
from collectors.ssh.processes import request_processes
from fleet.facade import UnknownNode
from gpufleet.demo_shards import shard_processes
from gpufleet.shard import write_targets_file
from testkit.loopback import LoopbackFleet
from testkit.loopback.harness import fast_options
from testkit.loopback.recorder import UpdateRecorder
from tests.runtime.waits import wait_until

pytestmark = pytest.mark.e2e

SEED, GPUS = 7, 4
NODES = ("node-001", "node-002", "node-003")
PASSWORDS = {"shard-1": "s1-Pw.q1", "shard-2": "s2-Pw.q2", "viewer": "v-Pw.q3"}


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[LocalNats]:
    """Two shard users and a read-only viewer (no probe right), as docs/scale-out.md."""
    users = [shard_user(f"shard-{k}", hash_password(PASSWORDS[f"shard-{k}"]), k) for k in (1, 2)]
    users.append(viewer_user("viewer", hash_password(PASSWORDS["viewer"])))
    server = await start_nats_server(tmp_path / "nats", config=authorization_block(users))
    try:
        yield server
    finally:
        await server.stop()


def shard_config(tmp_path: Path, url: str, k: int) -> Path:
    password = tmp_path / f"shard-{k}.password"
    password.write_text(PASSWORDS[f"shard-{k}"] + "\n")
    password.chmod(0o600)
    config = tmp_path / f"shard-{k}.toml"
    config.write_text(
        f'[fleet]\nhosts = ["node-[001-003]"]\nexpected_gpus = {GPUS}\ninterval = 0.5\n'
        f"\n[cluster]\nnats_url = {json.dumps(url)}\nnats_user = {json.dumps(f'shard-{k}')}\n"
        f"nats_password_file = {json.dumps(str(password))}\n"
    )
    return config


def without_readings(listing: ProcessListing) -> list[tuple[object, ...]]:
    """Each process but its memory, which the simulator moves every second: present or not."""
    return [
        (p.gpu, p.pid, p.user, p.command, p.memory_used_bytes is None) for p in listing.processes
    ]


async def test_the_viewer_lists_what_the_owning_shard_reads_and_others_refuse(
    tmp_path: Path, secured: LocalNats
) -> None:
    scenario = tmp_path / "quiet.toml"
    scenario.write_text(f"gpus = {GPUS}\n")
    targets = tmp_path / "targets.json"
    configs = [shard_config(tmp_path, secured.url, k) for k in (1, 2)]
    (tmp_path / "data").mkdir()
    viewer_auth = NatsAuth(user="viewer", password=PASSWORDS["viewer"])
    async with LoopbackFleet(nodes=3, gpus=GPUS, scenario=scenario, seed=SEED) as lf:
        node_targets = lf.targets(interval=0.5, slow_interval=1.0)
        write_targets_file(targets, node_targets)
        rec = UpdateRecorder()
        options = fast_options(agent_bundle=None, connect_timeout=10.0)
        async with (
            shard_processes(configs, targets, tmp_path / "data"),
            SshFleet(node_targets, rec, options) as own,
        ):
            viewer = AttachedFleet(secured.url, tick_s=0.5, auth=viewer_auth, read_only=True)
            await viewer.start()
            try:

                def streaming() -> bool:
                    snap = viewer.latest()
                    return snap is not None and snap.nodes_streaming == len(NODES)

                await wait_until(streaming, 120, "every node streaming through the shards")
                await rec.wait_until(lambda: all(rec.samples[n] >= 1 for n in NODES), 60)
                assert lf.simulation is not None
                seen: dict[str, tuple[ProcessListing, ProcessListing, set[int]]] = {}
                for name in NODES:
                    session = own.session(name)
                    assert session is not None
                    before = lf.simulation.elapsed
                    remote = await viewer.processes(name)
                    local = await request_processes(session)
                    after = lf.simulation.elapsed
                    workload = NodeWorkload(SEED, name, GPUS)
                    jobs = {workload.segment_at(t) for t in (before - 3.0, after)}
                    seen[name] = (remote, local, {job.pid for job in jobs if job.pid})
                    assert {" ".join(job_command(SEED, job)) for job in jobs} >= {
                        p.command for p in remote.processes
                    }
                foreign = next(n for n in NODES if owner(n, 2) == 2)
                nc = await connect(secured.url, "asker", viewer_auth)
                try:
                    reply = await nc.request(request_subject(1, "processes"), foreign.encode(), 30)
                finally:
                    await nc.close()
            finally:
                await viewer.stop()
    for name, (remote, local, pids) in seen.items():
        assert remote.node == name and remote.error is None, remote
        assert without_readings(remote) == without_readings(local), name
        assert {p.pid for p in remote.processes} <= pids, name  # the simulator's own jobs
    assert any(remote.processes for remote, _, _ in seen.values()), "some node runs a job"
    with pytest.raises(UnknownNode, match=f"{foreign} is not collected by shard 1/2"):
        decode_answer(foreign, reply.data)
