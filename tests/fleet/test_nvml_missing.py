"""A node whose agent cannot open NVML: the node rule names the agent's error first, as
``gpufleet check`` does. The agent runs for real on this machine, which has no driver."""

from __future__ import annotations

import subprocess
import sys

from collectors.protocol import decode_line
from collectors.updates import NodeMessage, NodeStatusChange
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec


def test_the_grid_says_no_nvml_with_the_agents_error() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "collectors.agent", "--max-samples", "2", "--interval", "0.1",
         "--host", "n1", "--no-jobs"],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    state = FleetState([NodeSpec("n1", 8)], HealthSection())
    state.ingest(NodeStatusChange("n1", "streaming", "", 0.0))
    received = 0.0
    for line in run.stdout.splitlines():
        message = decode_line(line)
        received = message.t
        state.ingest(NodeMessage("n1", message, received))
    node = state.snapshot(received + 0.1).nodes[0]
    assert node.state == "broken"
    assert node.broken_reasons[0] == "no NVML (NVMLError_LibraryNotFound)"
    assert any("0 of 8" in reason for reason in node.broken_reasons[1:])  # the counts last
