"""A probe of a node is one event-log row with its worst verdict, not one row per GPU."""

from __future__ import annotations

from fleet.event_log import node_changes
from fleet.model import ProbeVerdict
from testkit.snapshots import demo_snapshot, probe_flag


def test_one_row_per_probe_with_the_worst_verdict() -> None:
    node = demo_snapshot(1, faults=False).nodes[0]
    probed = node
    verdicts: dict[int, ProbeVerdict] = {5: "fail", 2: "slow"}
    for gpu in range(8):
        probed = probe_flag(probed, gpu, verdicts.get(gpu, "pass"))
    rows = [e for e in node_changes(node, probed, 100.0) if e.kind == "probe"]
    assert len(rows) == 1
    assert rows[0].verdict == "fail" and rows[0].severity == "bad"
    assert rows[0].text == "probe fail: GPU 5 fail, GPU 2 slow; 6 pass"


def test_a_clean_probe_is_one_passing_row() -> None:
    node = demo_snapshot(1, faults=False).nodes[0]
    probed = node
    for gpu in range(8):
        probed = probe_flag(probed, gpu, "pass")
    rows = [e for e in node_changes(node, probed, 100.0) if e.kind == "probe"]
    assert [(r.text, r.verdict) for r in rows] == [("probe pass: 8 GPUs pass", "pass")]
    assert rows[0].gpu is None
