"""Starting the simulated NVML node for ``--sim`` (demo and test nodes only).

Imported lazily by the agent: a real node never loads the simulator.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import tempfile
from typing import Any, Optional

from collectors.agent.cli import Options

DEFAULT_SCENARIO = "scenarios/demo.toml"
_SCRATCH_PREFIX = "gpufleet-sim-sysfs-"


class SimStartError(Exception):
    """The simulated node cannot start (bad scenario, simulator unavailable)."""


def scratch_sysfs(options: Options) -> Optional[str]:
    """A temporary tree for the simulated sysfs when none was given, in memory if possible.

    The simulator rewrites every port file a few times a second; on tmpfs that is
    ~40x cheaper than on a disk-backed /tmp. The caller removes it at exit.
    """
    if options.sysfs_root is not None:
        return None
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()
    _sweep_orphans(base)
    prefix = "%s%d-" % (_SCRATCH_PREFIX, os.getpid())
    options.sysfs_root = tempfile.mkdtemp(prefix=prefix, dir=base)
    return options.sysfs_root


def _sweep_orphans(base: str) -> None:
    """Remove scratch trees of agents that died without cleaning up.

    An ``agent_crash`` fault ends the process with ``os._exit``, which skips every
    cleanup; the next agent removes what such a process left (its pid is in the name).
    """
    for name in os.listdir(base):
        if not name.startswith(_SCRATCH_PREFIX):
            continue
        pid = name[len(_SCRATCH_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def start_sim(options: Options) -> Any:
    """Install the simulated node named by the options into this process's pynvml.

    Raises:
        SimStartError: the scenario is missing or invalid, or the simulator cannot run
            on this Python.
    """
    try:
        from pathlib import Path

        from collectors import sim
    except ImportError as exc:  # e.g. tomllib: the simulator needs Python 3.11
        raise SimStartError("the simulator cannot run here: %s" % exc) from None
    try:
        node = sim.install(
            options.sim_node,
            _scenario(sim, options.sim or "none"),
            seed=options.sim_seed,
            gpus=options.sim_gpus,
            sysfs_root=Path(options.sysfs_root) if options.sysfs_root else None,
            # Refreshing the fake sysfs faster than the agent samples it is wasted work
            # (a demo runs one such process per simulated node).
            refresh_s=min(options.interval, 1.0),
            # A restarted agent must not replay its node's faults from zero: every agent of
            # a simulated fleet reads one clock that started with the fleet.
            clock=sim.epoch_clock(options.sim_epoch) if options.sim_epoch is not None else None,
        )
    except (sim.ScenarioError, ValueError, OSError) as exc:
        raise SimStartError(str(exc)) from None
    options.sysfs_root = str(node.sysfs_root)
    if options.proc_root is None:
        options.proc_root = str(node.proc_root)
    if options.etc_root is None:
        options.etc_root = str(node.etc_root)
    return node


def _scenario(sim: Any, choice: str) -> Any:
    if choice == "none":
        return None
    if choice != "default":
        from pathlib import Path

        return sim.load_scenario(Path(choice))
    path = sim.default_scenario_path()
    if path.is_file():
        return sim.load_scenario(path)
    # Inside the zipapp the packaged scenario is no file on disk: read it as package data.
    data = pkgutil.get_data("collectors.sim", DEFAULT_SCENARIO)
    if data is None:
        raise SimStartError("the default scenario is not packaged")
    return sim.parse_scenario(data.decode("utf-8"), "collectors/sim/" + DEFAULT_SCENARIO)
