"""The demo's load guard: it warns before simulating more nodes than the machine can."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpufleet.demo_load import NODES_PER_CORE, demo_capacity, load_warning

ROOT = Path(__file__).resolve().parents[2]


def test_capacity_scales_with_cores_and_gpus() -> None:
    assert demo_capacity(2) == 2 * NODES_PER_CORE
    assert load_warning(16, cpus=2) is None
    warning = load_warning(512, cpus=2)
    assert warning is not None and "512 simulated nodes" in warning and "has 2" in warning
    assert f"--nodes {demo_capacity(2)}" in warning
    assert load_warning(demo_capacity(2), gpus_per_node=16, cpus=2) is not None


def test_demo_prints_the_warning_before_starting(tmp_path: Path) -> None:
    # A fleet far beyond any machine, stopped at once by a bad scenario path after the guard.
    nodes = demo_capacity() * 4
    proc = subprocess.run(
        [sys.executable, "-m", "gpufleet.cli", "demo", "--headless", "--duration", "0",
         "--nodes", str(nodes), "--scenario", str(tmp_path / "missing.toml")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert f"warning: {nodes} simulated nodes need" in proc.stderr
