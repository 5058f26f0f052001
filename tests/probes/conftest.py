"""Fixtures of the probe tests: simulated nodes on loopback SSH and a runner for them.

The simulated nodes are the project's ``LoopbackFleet`` in agent mode: a probe
command runs as a local process in the node's home with ``GPUFLEET_SIM_PROBE_FAULTS``
taken from a scenario file, so the kernels really run on the CPU, once per
simulated GPU, and a test can look the probe's pid up in /proc.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncssh
import pytest

from collectors.ssh import NodeTarget, SshOptions, connect_node
from probes.bundle import ProbeBundle, build_probe_bundle
from probes.runner import ProbeRunner, ProbeTarget
from probes.settings import ProbeSettings
from testkit.loopback import LoopbackFleet

OPTIONS = SshOptions(connect_timeout=5.0, ssh_config=None)
# A slowdown no CPU finishes within a test: the probe is still measuring when stopped.
ENDLESS = 100_000.0


def scenario_text(gpus: int, slow: dict[str, dict[int, float]], sdc: dict[str, list[int]]) -> str:
    """A scenario TOML with ``slow_gpu`` and ``sdc`` faults from the start."""
    lines = [f"gpus = {gpus}"]
    for node, factors in slow.items():
        for gpu, factor in factors.items():
            lines += ["[[fault]]", 'kind = "slow_gpu"', f'node = "{node}"', f"gpu = {gpu}"]
            lines += ['at = "0s"', f"factor = {factor}"]
    for node, gpus_with_sdc in sdc.items():
        for gpu in gpus_with_sdc:
            lines += ["[[fault]]", 'kind = "sdc"', f'node = "{node}"', f"gpu = {gpu}", 'at = "0s"']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def bundle() -> ProbeBundle:
    """The probe zipapp, built once."""
    return build_probe_bundle()


@pytest.fixture
def make_runner(bundle: ProbeBundle) -> Callable[..., ProbeRunner]:
    """A runner over real SSH with the test interpreter (which has torch) as probe Python."""

    def make(**settings: object) -> ProbeRunner:
        values: dict[str, object] = {"python": sys.executable, "timeout_s": 60.0}
        values.update(settings)
        return ProbeRunner(_connect, ProbeSettings(**values), bundle)  # type: ignore[arg-type]

    return make


async def _connect(target: ProbeTarget) -> asyncssh.SSHClientConnection:
    assert isinstance(target, NodeTarget)
    return await connect_node(target, OPTIONS)


@contextlib.asynccontextmanager
async def sim_fleet(
    tmp_path: Path,
    nodes: int = 1,
    gpus: int = 2,
    slow: dict[str, dict[int, float]] | None = None,
    sdc: dict[str, list[int]] | None = None,
) -> AsyncIterator[LoopbackFleet]:
    """Simulated nodes ``node-001``... with the given probe faults."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(scenario_text(gpus, slow or {}, sdc or {}), encoding="utf-8")
    async with LoopbackFleet(nodes, gpus=gpus, mode="agent", scenario=scenario) as fleet:
        yield fleet


def process_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members
