"""A throwaway Slurm cluster on loopback: munged, slurmctld and one slurmd, for tests.

Everything lives in one temporary directory (config, state, spool, logs, the munge key
and socket); the daemons run in the foreground as children of the test and are stopped
when the context ends. The node's GPUs are gres entries whose ``File=`` names character
device nodes made in that directory with the numbers of ``/dev/null`` and ``/dev/zero``
(slurmd stats each and refuses a regular file; with ``AutoDetect=off`` and
``ConstrainDevices=no`` nothing opens them as GPUs), so a machine without GPUs still
allocates ``--gres=gpu:N`` and sets ``CUDA_VISIBLE_DEVICES`` in the job.

Process tracking is ``proctrack/cgroup`` with ``task/cgroup`` when the machine has
writable cgroup v1 controllers (``freezer`` at least), so a job's processes sit in
``/sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_<id>/step_<step>``: the layout the
agent reads. Without them it falls back to ``proctrack/linuxproc`` and says so in
:attr:`SlurmCluster.tracking`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.ports import free_port

GPUS = 2
STAND_IN_MINORS = (3, 5)  # /dev/null and /dev/zero's minors (major 1, mem)
READY_TIMEOUT_S = 60.0
CGROUP_V1_FREEZER = Path("/sys/fs/cgroup/freezer")


def slurm_installed() -> bool:
    """Are the daemons and clients this kit starts on the PATH?"""
    return all(shutil.which(name) for name in ("munged", "slurmctld", "slurmd", "sbatch", "squeue"))


@dataclass(frozen=True)
class SlurmCluster:
    """A running throwaway cluster: its directory, environment and tracking plugin."""

    root: Path
    node: str
    tracking: str  # "proctrack/cgroup" or "proctrack/linuxproc"

    @property
    def env(self) -> dict[str, str]:
        """The environment under which the clients (sbatch, squeue) talk to this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")}

    def run(self, *argv: str, timeout: float = 30.0) -> str:
        """Run one Slurm client against this cluster; its stdout (raises on failure)."""
        done = subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def gres_file(self, index: int) -> Path:
        """The regular file standing in for ``/dev/nvidia<index>``."""
        return self.root / "dev" / f"nvidia{index}"


def _cgroup_v1_writable() -> bool:
    return CGROUP_V1_FREEZER.is_dir() and os.access(CGROUP_V1_FREEZER, os.W_OK)


def _write_config(root: Path, node: str, tracking: str) -> None:
    ctld_port, slurmd_port = free_port(), free_port()
    cgroup = tracking == "proctrack/cgroup"
    dev = root / "dev"
    dev.mkdir()
    for index in range(GPUS):
        # Slurm refuses a regular file ("not a valid character or block device") and then
        # sets no CUDA_VISIBLE_DEVICES: each stand-in is a character device node with
        # the numbers of a harmless memory device (1,3 /dev/null; 1,5 /dev/zero...).
        os.mknod(
            dev / f"nvidia{index}", 0o600 | stat.S_IFCHR, os.makedev(1, STAND_IN_MINORS[index])
        )
    lines = [
        "ClusterName=gpufleettest",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        f"ProctrackType={tracking}",
        f"TaskPlugin={'task/cgroup' if cgroup else 'task/none'}",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        "GresTypes=gpu",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:{GPUS} State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
    ]
    (root / "state").mkdir()
    (root / "spool").mkdir()
    (root / "slurm.conf").write_text("\n".join(lines) + "\n")
    (root / "gres.conf").write_text(
        "AutoDetect=off\n" + f"Name=gpu File={dev}/nvidia[0-{GPUS - 1}]\n"
    )
    (root / "cgroup.conf").write_text(
        "CgroupPlugin=cgroup/v1\nConstrainDevices=no\nConstrainCores=no\nConstrainRAMSpace=no\n"
    )


def _start_munge(root: Path) -> subprocess.Popen[bytes]:
    key = root / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    return subprocess.Popen(
        [
            "munged",
            "--foreground",
            "--force",
            f"--socket={root / 'munge.socket'}",
            f"--key-file={key}",
            f"--log-file={root / 'munged.log'}",
            f"--pid-file={root / 'munged.pid'}",
            f"--seed-file={root / 'munged.seed'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def poll_until(condition: Callable[[], bool], timeout: float, every: float = 0.2) -> bool:
    """Whether ``condition()`` became true within ``timeout`` s, asked every ``every`` s.

    Slurm's daemons, scheduler and jobs offer nothing to wait on but their files and
    their answers, so each wait of this kit asks again until its deadline.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


def _wait_for(what: str, ready: object, procs: list[subprocess.Popen[bytes]], log: Path) -> None:
    """Poll ``ready()`` until true; a daemon that exits first fails with its log's tail."""

    def up() -> bool:
        if ready():  # type: ignore[operator]
            return True
        if any(proc.poll() is not None for proc in procs):
            raise RuntimeError(f"{what}: a daemon exited: {_tail(log)}")
        return False

    if poll_until(up, READY_TIMEOUT_S):
        return
    raise RuntimeError(f"{what} not ready in {READY_TIMEOUT_S:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-2000:]
    return "(no log)"


@contextlib.contextmanager
def slurm_cluster(root: Path) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and slurmd under ``root``; stop them on exit."""
    node = socket.gethostname().split(".")[0]
    tracking = "proctrack/cgroup" if _cgroup_v1_writable() else "proctrack/linuxproc"
    _write_config(root, node, tracking)
    cluster = SlurmCluster(root=root, node=node, tracking=tracking)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_start_munge(root))
        _wait_for("munged", (root / "munge.socket").exists, procs, root / "munged.log")
        env = cluster.env
        procs.append(subprocess.Popen(["slurmctld", "-D", "-i"], env=env))
        _wait_for("slurmctld", lambda: _answers(cluster), procs, root / "slurmctld.log")
        procs.append(subprocess.Popen(["slurmd", "-D", "-N", node], env=env))
        _wait_for("slurmd", lambda: _node_up(cluster), procs, root / "slurmd.log")
        yield cluster
    finally:
        if len(procs) == 3:
            _cancel_all(cluster)
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _answers(cluster: SlurmCluster) -> bool:
    try:
        cluster.run("scontrol", "ping", timeout=5)
    except (RuntimeError, subprocess.TimeoutExpired):
        return False
    return True


def _node_up(cluster: SlurmCluster) -> bool:
    try:
        state = cluster.run("sinfo", "-h", "-N", "-o", "%T", timeout=5).strip()
    except (RuntimeError, subprocess.TimeoutExpired):
        return False
    return state in ("idle", "mixed", "allocated")


def _cancel_all(cluster: SlurmCluster) -> None:
    """Cancel every job of this cluster and wait until slurmd has ended their processes.

    Stopping slurmd first would leave a job's processes running, orphaned.
    """
    with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
        cluster.run("scancel", "--user", str(os.getuid()), timeout=10)

    def drained() -> bool:
        try:
            return not cluster.run("squeue", "-h", "-o", "%i", timeout=5).strip()
        except (RuntimeError, subprocess.TimeoutExpired):
            return True  # no scheduler to ask: nothing left to wait for

    poll_until(drained, READY_TIMEOUT_S)


def wait_for_file(path: Path, timeout: float = READY_TIMEOUT_S) -> str:
    """The text of ``path`` once a job has written a full line to it."""

    def written() -> bool:
        with contextlib.suppress(OSError):
            return path.read_text().endswith("\n")
        return False

    if poll_until(written, timeout, every=0.1):
        return path.read_text()
    raise TimeoutError(f"{path} not written in {timeout:.0f} s")
