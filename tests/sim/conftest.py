"""Fixtures for the simulated node: a manual clock and an installed node per test."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest

from collectors import sim
from collectors.sim import ManualClock, Scenario, SimNode
from collectors.sim.node import memory_tempdir

InstallNode = Callable[..., SimNode]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sysfs_base() -> Iterator[Path]:
    """A temp dir in RAM where possible: sysfs trees are hundreds of small files."""
    base = memory_tempdir("gpufleet-test-")
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def install_node(sysfs_base: Path, clock: ManualClock) -> Iterator[InstallNode]:
    """Install a simulated node with no ticker thread; tests move ``clock`` and tick()."""
    previous = pynvml.nvmlLib
    nodes: list[SimNode] = []

    def install(
        node: str = "node-001", scenario: Scenario | str | None = None, **kwargs: Any
    ) -> SimNode:
        if isinstance(scenario, str):
            scenario = sim.parse_scenario(scenario, source="test.toml")
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("refresh_s", None)
        kwargs.setdefault("sysfs_root", sysfs_base / f"sys-{len(nodes)}")
        installed = sim.install(node, scenario, **kwargs)
        nodes.append(installed)
        return installed

    yield install
    for installed in nodes:
        installed.close()
    with pynvml.libLoadLock:
        pynvml.nvmlLib = previous
        pynvml._nvmlGetFunctionPointer_cache.clear()


@pytest.fixture
def nvml(install_node: InstallNode) -> Iterator[Callable[..., SimNode]]:
    """Install a node and initialise NVML on it; shut NVML down afterwards."""
    initialised = []

    def start(*args: Any, **kwargs: Any) -> SimNode:
        node = install_node(*args, **kwargs)
        pynvml.nvmlInit()
        initialised.append(node)
        return node

    yield start
    for _ in initialised:
        # Refcounted like the real library; a later install may already have replaced it.
        with contextlib.suppress(pynvml.NVMLError_Uninitialized):
            pynvml.nvmlShutdown()
