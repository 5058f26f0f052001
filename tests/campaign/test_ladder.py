"""The ladder's scheduling and bisection, over a step runner that answers from a table."""

from __future__ import annotations

import math

from campaign.ladder import Ladder, Purpose, StepRunner, pairs, rung_sizes
from campaign.model import FabricStep

NODES = [f"node-{i:03d}" for i in range(1, 9)]


def table_runner(
    slow: frozenset[str] = frozenset(), hang: frozenset[str] = frozenset()
) -> tuple[StepRunner, list[tuple[str, ...]]]:
    """10 GB/s, 2.0 with a slow node in the group, hung with a hanging one."""
    calls: list[tuple[str, ...]] = []

    async def run(nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        calls.append(nodes)
        if hang & set(nodes):
            return FabricStep(purpose, nodes, "hung", None, None, 0.0, 1.0)
        busbw = 2.0 if slow & set(nodes) else 10.0
        return FabricStep(purpose, nodes, "ok", busbw, None, 0.0, 1.0)

    return run, calls


def test_rungs_double_up_to_every_node() -> None:
    assert rung_sizes(8) == [2, 4, 8]
    assert rung_sizes(6) == [2, 4, 6]
    assert rung_sizes(1) == []
    assert pairs(["a", "b", "c"]) == [("a", "b", "c")]
    assert pairs(["a", "b", "c", "d"]) == [("a", "b"), ("c", "d")]


async def test_a_healthy_fabric_climbs_every_rung_once() -> None:
    run, calls = table_runner()
    result = await Ladder(run, 0.8, None).run(NODES)
    assert not result.culprits
    assert result.denominator_gbps == 10.0
    assert [len(c) for c in calls] == [2, 2, 2, 2, 4, 8]
    assert result.rounds == 3


async def test_each_position_of_a_slow_node_is_found_within_log2_n_plus_2_rounds() -> None:
    for culprit in NODES:
        run, _ = table_runner(slow=frozenset({culprit}))
        result = await Ladder(run, 0.8, None).run(NODES)
        assert set(result.culprits) == {culprit}
        assert result.culprits[culprit].cause == "fabric_slow"
        assert result.culprits[culprit].threshold == 8.0
        assert result.rounds <= math.log2(len(NODES)) + 2, culprit


async def test_a_hanging_node_is_isolated() -> None:
    run, _ = table_runner(hang=frozenset({"node-006"}))
    result = await Ladder(run, 0.8, None).run(NODES)
    assert set(result.culprits) == {"node-006"}
    assert result.culprits["node-006"].cause == "fabric_hang"


async def test_two_culprits_in_different_pairs() -> None:
    run, _ = table_runner(slow=frozenset({"node-002", "node-007"}))
    result = await Ladder(run, 0.8, None).run(NODES)
    assert set(result.culprits) == {"node-002", "node-007"}


async def test_a_stated_denominator_judges_even_a_uniformly_slow_fabric() -> None:
    run, _ = table_runner()
    result = await Ladder(run, 0.8, 50.0).run(NODES[:2])
    assert result.floor_gbps == 40.0
    assert result.steps[0].status == "slow"
    assert set(result.culprits) == {"node-001", "node-002"}  # nobody healthy to narrow with
