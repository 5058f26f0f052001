"""A scrape of the state's own snapshots reads the tick's rows: the same bytes as the
GPU and port objects give, and no object built ."""

from __future__ import annotations

from dataclasses import replace

from bench.lib.metrics_fleets import troubled_ticks as _ticks
from bench.lib.metrics_fleets import without_scrape_duration
from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot, evolve
from tests.metrics.test_promtool import promtool_findings


def _objects_only(snapshot: FleetSnapshot) -> FleetSnapshot:
    """The same snapshot with every node's GPU and port objects built and no rows."""
    return replace(snapshot, nodes=tuple(node.detached() for node in snapshot.nodes))


def _built(snapshot: FleetSnapshot) -> list[str]:
    return [
        f"{node.name}.{which}"
        for node in snapshot.nodes
        if node.rows is not None
        for which in ("gpus", "ports", "nics")
        if node.rows.built(which) is not None
    ]


def test_rows_render_the_bytes_the_objects_render_scrape_after_scrape() -> None:
    ticks = _ticks()
    from_rows, from_objects = (
        ExpositionRenderer(raw_port_counters=True),
        ExpositionRenderer(raw_port_counters=True),
    )
    for snapshot in ticks:
        fast = from_rows.render(snapshot)
        slow = from_objects.render(_objects_only(snapshot))
        assert without_scrape_duration(fast) == without_scrape_duration(slow)
    text = fast.decode()
    # The cases are in the text, not vacuous: hostile labels escaped, exact integers,
    # a NIC without speed has no rate series, the lost GPU says so.
    assert 'model="H100 \\"80GB\\" \\\\ %s %d %%"' in text
    assert f"{2**63 + 1}\n" in text
    assert 'gpufleet_gpu_lost{node="node-002",gpu="3",' in text
    assert 'gpufleet_port_rate_bytes_per_second{node="node-005",port="eth0"' not in text
    assert 'gpufleet_port_rate_bytes_per_second{node="node-004",port="eth0"' in text
    assert promtool_findings(fast) == []


def test_a_scrape_builds_no_gpu_or_port_object() -> None:
    snapshot = _ticks(8, 2)[-1]
    before = _built(snapshot)  # the state reads the node that lost a GPU itself
    assert len(before) < 3
    body = ExpositionRenderer(raw_port_counters=True).render(snapshot)
    assert b"gpufleet_gpu_utilization_percent" in body
    assert b"gpufleet_port_raw_value" in body
    assert _built(snapshot) == before


def test_a_node_with_objects_set_on_a_copy_is_read_from_them() -> None:
    snapshot = _ticks(4, 2)[-1]
    node = snapshot.nodes[2]
    probed = tuple(replace(g, probe_verdict="straggler") for g in node.gpus)
    nodes = (snapshot.nodes[0], evolve(node, gpus=probed), *snapshot.nodes[2:])
    decorated = replace(snapshot, nodes=nodes)
    body = ExpositionRenderer().render(decorated)
    assert "node-003.gpus" in _built(decorated)  # read for the copy above
    assert "node-004.gpus" not in _built(decorated)
    assert body == ExpositionRenderer().render(_objects_only(decorated))
    assert b'verdict="straggler"} 1\n' in body


def test_nodes_of_different_ticks_in_one_chunk_read_their_own_tick() -> None:
    # A node whose rows come from an earlier tick (as a node that sent nothing since):
    # its port rates are its own tick's, not the chunk's other nodes'.
    earlier, later = _ticks(6, 3)[1:]
    nodes = tuple(
        e if i % 2 else n for i, (e, n) in enumerate(zip(earlier.nodes, later.nodes, strict=True))
    )
    mixed = replace(later, nodes=nodes)
    body = ExpositionRenderer().render(mixed)
    assert body == ExpositionRenderer().render(_objects_only(mixed))
    assert body != ExpositionRenderer().render(later)
