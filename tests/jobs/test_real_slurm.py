"""A real Slurm (munged, slurmctld, slurmd on loopback): real jobs, real cgroups.

The jobs run ``sleep`` under ``proctrack/cgroup``; the agent's attribution reads their
real ``/proc/<pid>/cgroup`` and ``environ``. NVML is the one part a GPU-less machine
cannot run: the job's PID stands in for what ``nvmlDeviceGetComputeRunningProcesses``
would list on GPU 0. The login-node query goes through a real sshd on loopback.

End to end, the running fleet asks that login node itself: a simulated node (the real
agent over loopback SSH) runs a job with the id of a real ``sbatch`` job, and the name
and account the real ``squeue`` gives reach the node's snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.agent.jobs import attribute, placement, read_cgroup
from collectors.demo import start_demo_fleet
from collectors.ssh.options import SshOptions
from fleet.model import FleetSnapshot
from fleet.settings.jobs_section import JobsSection
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from ledger.jobs.login_node import ssh_runner
from ledger.jobs.slurm_meta import SlurmMetadata
from testkit.loopback.openssh import OpenSshServer
from testkit.loopback.recorder import eventually
from testkit.slurm import SlurmCluster, slurm_cluster, wait_for_file
from tui.node_tables import node_summary

UUIDS = ["GPU-00000000-1111-2222-3333-444444444444", "GPU-55555555-6666-7777-8888-999999999999"]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def _submit(cluster: SlurmCluster, name: str, pid_file: Path) -> str:
    """A one-GPU batch job whose sleeping process writes its PID; the job id."""
    script = f"echo $$ > {pid_file}; exec sleep 600"
    return cluster.run(
        "sbatch", "--parsable", "-J", name, "--gres=gpu:1", "--output=/dev/null", "--wrap", script
    ).strip()


def test_a_real_job_is_attributed_through_its_real_cgroup(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    assert cluster.tracking == "proctrack/cgroup", "this machine has no writable cgroup v1"
    busy = _submit(cluster, "gpufleet-busy", tmp_path / "busy.pid")
    idle = _submit(cluster, "gpufleet-idle", tmp_path / "idle.pid")
    busy_pid = int(wait_for_file(tmp_path / "busy.pid"))
    idle_pid = int(wait_for_file(tmp_path / "idle.pid"))

    text = read_cgroup("/proc", busy_pid)
    assert text is not None and f"/job_{busy}/step_batch" in text
    assert placement(text) == {"scheduler": "slurm", "job": busy, "step": "batch"}

    # The busy job's process is on GPU 0 (as NVML would list it); the idle job holds
    # GPU 1 with no process on it, named only by its CUDA_VISIBLE_DEVICES.
    pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    jobs = attribute("/proc", [(0, busy_pid)], UUIDS, pids=pids)
    seen = {(e["gpu"], e["job"], e["step"], e["via"], e["user"]) for e in jobs}
    assert (0, busy, "batch", "nvml", "root") in seen
    assert (1, idle, "batch", "env", "root") in seen
    idle_text = read_cgroup("/proc", idle_pid)
    assert idle_text is not None and placement(idle_text) == {
        "scheduler": "slurm",
        "job": idle,
        "step": "batch",
    }


async def test_the_login_node_query_names_the_job_and_its_user(cluster: SlurmCluster) -> None:
    job = cluster.run(
        "sbatch", "--parsable", "-J", "gpufleet-meta", "--output=/dev/null", "--wrap", "sleep 600"
    ).strip()
    async with OpenSshServer() as sshd:
        section = JobsSection(
            login_node="127.0.0.1",
            login_user="root",
            login_port=sshd.port,
            slurm_conf=str(cluster.root / "slurm.conf"),
        )
        meta = SlurmMetadata(section, ssh_runner(section, sshd.known_hosts, [sshd.client_key_path]))
        assert await meta.refresh(now=0.0) >= 1, meta.last_error
    found = meta.get(job)
    assert found is not None
    assert (found.name, found.user, found.partition) == ("gpufleet-meta", "root", "debug")
    assert found.start is not None or found.state == "PENDING"


def _named(snap: FleetSnapshot | None) -> set[tuple[str, str, str, str]]:
    node = None if snap is None else snap.node("node-001")
    return set() if node is None else {(i.job, i.name, i.account, i.partition) for i in node.jobs}


async def test_the_running_fleet_names_a_live_job_from_the_login_node(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    job = cluster.run(
        "sbatch", "--parsable", "-J", "llama-pretrain", "--account=nlp",
        "--output=/dev/null", "--wrap", "sleep 600",
    ).strip()  # fmt: skip
    scenario = tmp_path / "job.toml"
    scenario.write_text(
        f'[[fault]]\nkind = "job"\nnode = "node-001"\nat = "0s"\nid = {job}\nuser = "root"\n',
        encoding="utf-8",
    )
    demo = await start_demo_fleet(nodes=1, gpus=2, scenario=scenario, seed=1)
    try:
        async with OpenSshServer() as sshd:
            config = parse_config(
                {"fleet": {"hosts": ["node-001"], "interval": 0.5, "slow_interval": 1.0,
                           "known_hosts": sshd.known_hosts,
                           "identity_file": sshd.client_key_path},
                 "jobs": {"login_node": "127.0.0.1", "login_user": "root",
                          "login_port": sshd.port,
                          "slurm_conf": str(cluster.root / "slurm.conf")}}
            )  # fmt: skip
            options = SshOptions(ssh_config=None, backoff_base=0.2, backoff_cap=1.0)
            runtime = FleetRuntime(config, demo.targets, data_dir=None, ssh_options=options)
            await runtime.start()
            try:
                wanted = {(job, "llama-pretrain", "nlp", "debug")}
                await eventually(lambda: _named(runtime.latest()) == wanted, 90)
                latest = runtime.latest()
                node = None if latest is None else latest.node("node-001")
                assert latest is not None and node is not None
                # The node screen: the scheduler's words (the node itself knows uid 0 only).
                assert node_summary(node, latest.taken_at).splitlines()[-1] == (
                    f"jobs: {job} llama-pretrain · root · nlp/debug · GPUs 0-1"
                )
            finally:
                await runtime.stop()
    finally:
        await demo.stop()
