"""A node's last NVLink rows are kept as one shared copy per distinct value.

Healthy links send the same row on every GPU of every node; at 1,000 nodes of 8 GPUs x
18 links one copy per GPU was ~12 MiB. Sharing must keep a GPU whose links moved apart,
and the table of kept rows stays bounded whatever the nodes send.
"""

from __future__ import annotations

from fleet.state import nvlink
from tests.fleet.feed import NodeFeed, started_fleet


def test_healthy_gpus_of_every_node_keep_one_copy_of_their_link_rows() -> None:
    first, second = NodeFeed("gpu-001", nvlinks=18), NodeFeed("gpu-002", nvlinks=18)
    state = started_fleet(first, second)
    rows = []
    for name in ("gpu-001", "gpu-002"):
        kept = state._nodes[name].links.rows
        assert kept is not None
        rows.extend(kept)
    assert len(rows) == 16
    assert all(gpu is rows[0] for gpu in rows)


def test_a_gpu_whose_crc_count_moved_keeps_rows_of_its_own_and_is_flagged() -> None:
    first, second = NodeFeed("gpu-001", nvlinks=4), NodeFeed("gpu-002", nvlinks=4)
    state = started_fleet(first, second)
    second.add_link_crc(gpu=3, link=2, errors=50)
    state.ingest(second.sample())
    state.ingest(first.sample())
    rows = state._nodes["gpu-002"].links.rows
    healthy = state._nodes["gpu-001"].links.rows
    assert rows is not None and healthy is not None
    assert rows[3] is not healthy[3] and rows[3] != healthy[3]
    assert rows[2] is healthy[2]
    node = next(n for n in state.snapshot(second.t + 0.5).nodes if n.name == "gpu-002")
    assert node.gpus[3].nvlink_crc_rate is not None and node.gpus[3].nvlink_crc_rate > 0


def test_the_table_of_kept_rows_is_bounded() -> None:
    for k in range(3 * nvlink._SHARED_ROWS.most):
        rows = ((1, 0, 0, k, 0),)
        assert nvlink._shared(rows) == rows
    assert len(nvlink._SHARED_ROWS) <= nvlink._SHARED_ROWS.most
