"""Whole-process behaviour: agent_crash kills the process; seeds agree across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from collectors.sim import ManualClock

ROOT = Path(__file__).resolve().parents[2]
CRASH = """
[[fault]]
kind = "agent_crash"
node = "node-002"
at = 0.3
exit_code = 99
"""


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def test_agent_crash_exits_the_process_abruptly_at_its_time() -> None:
    result = _python(
        f"""
        import threading
        from collectors import sim
        node = sim.install("node-002", sim.parse_scenario({CRASH!r}), refresh_s=0.05)
        print("started", flush=True)
        threading.Event().wait(30)
        print("survived", flush=True)
        """
    )
    assert result.returncode == 99, result.stderr
    assert result.stdout == "started\n"


def test_agent_crash_fires_once_and_not_after_a_restart(install_node) -> None:
    crashes: list[int] = []
    clock = ManualClock()
    node = install_node("node-002", CRASH, clock=clock, on_crash=crashes.append)
    clock.set(1)
    node.tick()
    node.tick()
    assert crashes == [99]
    late = ManualClock(5)  # an agent started again after the crash time
    restarted = install_node("node-002", CRASH, clock=late, on_crash=crashes.append)
    late.set(10)
    restarted.tick()
    assert crashes == [99]


def test_readings_do_not_depend_on_the_process_hash_seed() -> None:
    code = """
        import pynvml
        from collectors import sim
        clock = sim.ManualClock(1234.5)
        with sim.install("node-007", seed=42, clock=clock, refresh_s=None):
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(6)
            print(pynvml.nvmlDeviceGetUUID(h), pynvml.nvmlDeviceGetPowerUsage(h))
        """
    first = _python(code, PYTHONHASHSEED="1")
    second = _python(code, PYTHONHASHSEED="2")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and first.stdout.startswith("GPU-")
