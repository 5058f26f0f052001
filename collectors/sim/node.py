"""Installing a simulated node into the real ``pynvml`` module, and its ticker thread."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pynvml

from collectors.sim.calls_delivery import provider_pids
from collectors.sim.identity import boot_id, machine_id
from collectors.sim.jobs import JobProcs
from collectors.sim.library import FakeNvmlLibrary
from collectors.sim.model import NodeModel
from collectors.sim.procfs import ProcWriter
from collectors.sim.scenario import Scenario, ScenarioError
from collectors.sim.sysfs import SysfsWriter

REFRESH_S = 0.25


def memory_tempdir(prefix: str) -> Path:
    """A new temp dir, in RAM (``/dev/shm``) where there is one.

    The ticker rewrites dozens of counter files four times a second per node; on a
    disk-backed /tmp that costs ~25x more than on tmpfs, which is also what sysfs is.
    """
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def _default_crash(exit_code: int) -> None:
    # An abrupt death: no cleanup, no "bye", buffered output lost, as with SIGKILL.
    os._exit(exit_code)


class SimNode:
    """A simulated node installed in this process.

    Attributes:
        name: The node's name (``node-001``).
        sysfs_root: Root of the fake sysfs tree (holds ``class/infiniband``, ``class/net``).
        proc_root: Root of the fake procfs (one entry per running simulated job, and
            ``sys/kernel/random/boot_id``).
        etc_root: Root of the fake ``/etc`` (``machine-id``).
        library: The fake library now set as ``pynvml.nvmlLib``.
    """

    def __init__(
        self,
        model: NodeModel,
        scenario: Scenario,
        sysfs_root: Path,
        clock: Callable[[], float],
        refresh_s: float | None,
        on_crash: Callable[[int], None],
    ) -> None:
        self.name = model.node
        self.sysfs_root = sysfs_root
        self.owns_root = False  # True when install() made the temp dir: close() removes it
        self.model = model
        self.scenario = scenario
        self.library = FakeNvmlLibrary(model, clock, time.time() - clock())
        self._clock = clock
        self._writer = SysfsWriter(sysfs_root, model.seed, model.faults)
        self.proc_root = sysfs_root / ".sim-proc"
        # The simulated jobs run as the login that runs the agent (a loopback node's user).
        self._procs = ProcWriter(self.proc_root, model.seed, model.workload, os.getuid())
        self._job_procs = JobProcs(self.proc_root)  # scheduler jobs' processes beside them
        self.etc_root = sysfs_root / ".sim-etc"
        self._host_ids: tuple[int, int] | None = None  # (boots, generation) written
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._on_crash = on_crash
        start = clock()
        # A crash already behind us (an agent restarted after it) does not fire again.
        self._crashes = sorted(
            (f.at, int(f.params["exit_code"]))
            for f, _ in model.faults.of_kind("agent_crash")
            if f.at >= start
        )
        self.tick()
        self._thread: threading.Thread | None = None
        if refresh_s is not None:
            self._thread = threading.Thread(
                target=self._run, args=(refresh_s,), name=f"sim-{self.name}", daemon=True
            )
            self._thread.start()

    def elapsed(self) -> float:
        """Seconds since the node's start, from its clock."""
        return self._clock()

    def _provider_pids(self, t: float) -> list[int]:
        model = self.model
        if not (model.faults.of_kind("memory_reserved") or model.faults.of_kind("provider_check")):
            return []  # most nodes: no view computed for this
        return sorted({p for g in model.visible(t) for p in provider_pids(model.view(g, t))})

    def _write_jobs(self, t: float) -> None:
        jobs = self.model.faults.running_jobs(t)
        if jobs or self._job_procs.written:
            uuids = [self.model.view(g, t).identity.uuid for g in range(self.model.gpus)]
            self._job_procs.write(jobs, uuids)

    def _write_host_ids(self, t: float) -> None:
        faults, model = self.model.faults, self.model
        ids = (faults.boots(t), faults.replacements(t))
        if ids == self._host_ids:
            return
        self._host_ids = ids
        _write_text(
            self.proc_root / "sys" / "kernel" / "random" / "boot_id",
            boot_id(model.seed, model.node, ids[0]),
        )
        _write_text(self.etc_root / "machine-id", machine_id(model.seed, model.node, ids[1]))

    def tick(self) -> float:
        """Bring sysfs to the current simulated time and wake event waiters.

        The ticker thread calls this every ``refresh_s``; a test with an injected clock
        calls it after moving the clock. Returns the simulated time it used.
        """
        t = self._clock()
        with self._write_lock:
            self._writer.write(t)
            self._procs.write(t, self._provider_pids(t))
            self._write_jobs(t)
            self._write_host_ids(t)
            due = [code for at, code in self._crashes if at <= t]
            del self._crashes[: len(due)]
        self.library.notify_events()
        for exit_code in due:
            if self._on_crash is _default_crash and self.owns_root:
                shutil.rmtree(self.sysfs_root, ignore_errors=True)  # don't leak RAM in /dev/shm
            self._on_crash(exit_code)
        return t

    def unreachable(self) -> bool:
        """True while the scenario makes this node unreachable."""
        return self.scenario.unreachable(self.name, self.elapsed())

    def close(self) -> None:
        """Stop the ticker thread and remove a temp sysfs tree that install() made.

        ``pynvml.nvmlLib`` is left as it is.
        """
        self._stop.set()
        self.library.release()
        self.library.notify_events()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self.owns_root:
            shutil.rmtree(self.sysfs_root, ignore_errors=True)

    def __enter__(self) -> SimNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, refresh_s: float) -> None:
        while not self._stop.wait(refresh_s):
            self.tick()


def _write_text(path: Path, text: str) -> None:
    # Replaced whole, never rewritten in place: the agent may be reading it.
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text + "\n", encoding="ascii")
    os.replace(temp, path)


def install(
    node: str,
    scenario: Scenario | None = None,
    *,
    seed: int = 0,
    gpus: int = 8,
    sysfs_root: Path | None = None,
    clock: Callable[[], float] | None = None,
    refresh_s: float | None = REFRESH_S,
    on_crash: Callable[[int], None] | None = None,
) -> SimNode:
    """Make this process's ``pynvml`` talk to a simulated node.

    Args:
        node: Node name, ``node-001`` style; its faults are taken from ``scenario``.
        scenario: Timed faults; None for a healthy node.
        seed: Seed of the workloads and identities.
        gpus: GPUs on the board.
        sysfs_root: Where to write the fake sysfs tree; a new temp dir when None.
        clock: Seconds since the node's start; real time since this call when None.
        refresh_s: Period of the ticker thread; None for no thread (call ``tick()``).
        on_crash: What an ``agent_crash`` fault does with its exit code; None means
            ``os._exit(code)``.

    Returns:
        The installed node. Its library is ``pynvml.nvmlLib`` until another install.

    Raises:
        ScenarioError: the scenario names a GPU this node does not have.
    """
    scenario = scenario or Scenario()
    if gpus < 1:
        raise ScenarioError(f"gpus must be >= 1, got {gpus}")
    scenario.validate(gpus=gpus)
    if clock is None:
        origin = time.monotonic()

        def clock() -> float:
            return time.monotonic() - origin

    root = Path(sysfs_root) if sysfs_root is not None else memory_tempdir(f"gpufleet-{node}-")
    crash = on_crash or _default_crash
    sim = SimNode(NodeModel(node, scenario, seed, gpus), scenario, root, clock, refresh_s, crash)
    sim.owns_root = sysfs_root is None
    with pynvml.libLoadLock:
        pynvml.nvmlLib = sim.library
        pynvml._nvmlGetFunctionPointer_cache.clear()
    return sim


__all__ = ["SimNode", "install", "memory_tempdir"]
