"""Healthy NVLinks' CRC rates (all 0) are one tuple for every GPU, never a copy per GPU.

A copy per GPU of 18 fresh floats stayed for the session (an equal tuple does not
replace the one a GPU holds): ~5 MiB at 1,000 nodes of 8 GPUs. Sharing must not hide a
link whose rate moves.
"""

from __future__ import annotations

from fleet.state import FleetState
from tests.fleet.feed import NodeFeed, started_fleet


def _rates(state: FleetState, node: str) -> list[tuple[float, ...]]:
    return [track.facts.nvlink_crc_link_rates for track in state._nodes[node].gpus]


def test_gpus_of_every_node_share_one_tuple_of_zero_link_rates() -> None:
    a, b = NodeFeed("gpu-001", nvlinks=4), NodeFeed("gpu-002", nvlinks=4)
    state = started_fleet(a, b)
    for feed in (a, b):
        state.ingest(feed.sample(advance=10.0))
    rates = _rates(state, "gpu-001") + _rates(state, "gpu-002")
    assert rates[0] == (0.0, 0.0, 0.0, 0.0)
    assert all(r is rates[0] for r in rates)


def test_a_link_with_crc_errors_gets_its_own_rates_and_the_others_keep_sharing() -> None:
    feed = NodeFeed("gpu-001", nvlinks=4)
    state = started_fleet(feed)
    feed.add_link_crc(gpu=2, link=1, errors=50)
    state.ingest(feed.sample(advance=10.0))
    rates = _rates(state, "gpu-001")
    assert rates[2][1] > 0 and rates[2][0] == rates[2][2] == rates[2][3] == 0.0
    others = [r for i, r in enumerate(rates) if i != 2]
    assert all(r is others[0] and r == (0.0,) * 4 for r in others)
