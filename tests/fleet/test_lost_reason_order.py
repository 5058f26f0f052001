"""A lost GPU's reason reads the same whether a snapshot fell between the agent's
``gpu_lost`` event and the sample that shows the GPU lost, or not."""

from __future__ import annotations

from pathlib import Path

from collectors.protocol import decode_line
from collectors.updates import NodeMessage, NodeStatusChange
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.agent.sim_clock import WALL_START
from tests.fleet.test_end_to_end import NODE, agent_lines, fault, sysfs_root  # noqa: F401


def broken_reasons(lines: list[bytes], snapshot_after_each_line: bool) -> tuple[str, ...]:
    state = FleetState([NodeSpec(NODE)], HealthSection())
    state.ingest(NodeStatusChange(NODE, "streaming", "", WALL_START))
    last = WALL_START
    for line in lines:
        message = decode_line(line)
        state.ingest(NodeMessage(NODE, message, message.t))
        last = message.t
        if snapshot_after_each_line:
            state.snapshot(last)
    return state.snapshot(last).nodes[0].broken_reasons


def test_a_tick_between_the_lost_event_and_its_sample_changes_no_reason(
    sysfs_root: Path,  # noqa: F811 (the fixture of test_end_to_end)
) -> None:
    """The XID from the agent's event thread came first, then the sample loop's
    ``gpu_lost`` and its sample (the order seen on a loaded machine)."""
    lines = agent_lines(sysfs_root, fault("xid79", "2s", gpu=5), samples=8)
    xid = next(i for i, line in enumerate(lines) if b'"kind":"xid"' in line)
    lost = next(i for i, line in enumerate(lines) if b'"kind":"gpu_lost"' in line)
    lines.insert(lost, lines.pop(xid))
    ticked_between = broken_reasons(lines, snapshot_after_each_line=True)
    assert ticked_between == broken_reasons(lines, snapshot_after_each_line=False)
    assert ticked_between[0] == "GPU 5 lost (XID 79): GPU has fallen off the bus"
