"""An agent that hangs on an open connection, judged by one rule everywhere.

The real agent runs on a simulated node over loopback SSH; at ``HANG_AT`` every NVML
call blocks (``agent_hang``), so the agent stops writing while the channel stays open.
With ``[health] stale_intervals = 10`` the node must read ``streaming`` until about 10
intervals after its last sample, then ``stale``, then (after ``stale_unreachable_s``)
``unreachable``, and the fleet state, the cluster board (fed the shard's summaries)
and history's node states must say the same at every tick.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from cluster.board import ShardBoard
from cluster.wire import decode_summary, summarize
from collectors.ssh import SshFleet, SshOptions
from fleet.state import FleetState, NodeSpec
from gpufleet.config import parse_config
from history.states import NodeStateBook, recorded_state
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_until

NODE = "node-001"
INTERVAL = 0.25
STALE_INTERVALS = 10
UNREACHABLE_S = 5.0
HANG_AT_S = 4.0
TICK_S = 0.1
# A tick may see the silence late by a tick, more on a loaded machine.
LATE_S = 1.0
SCENARIO = f"""
gpus = 2

[[fault]]
kind = "agent_hang"
node = "{NODE}"
at = "{HANG_AT_S}s"
"""


@dataclass(frozen=True, slots=True)
class Seen:
    """One tick's view of the node: silence, and what each reader says."""

    silent_s: float
    status: str
    state: str
    board_status: str
    board_state: str
    recorded: str


async def test_a_hung_agent_is_streaming_then_stale_then_unreachable(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    config = parse_config(
        {
            "fleet": {"hosts": [NODE], "interval": INTERVAL, "slow_interval": 1.0},
            "health": {
                "stale_intervals": STALE_INTERVALS,
                "stale_unreachable_s": UNREACHABLE_S,
            },
        }
    )
    state = FleetState([NodeSpec(NODE, 2)], config.health)
    board = ShardBoard(stale_intervals=3.0)
    book = NodeStateBook(session_file="test.parquet")
    seen: list[Seen] = []
    async with LoopbackFleet(nodes=1, gpus=2, scenario=scenario, seed=3) as loopback:
        targets = loopback.targets(interval=INTERVAL, slow_interval=1.0)
        options = SshOptions(ssh_config=None, connect_timeout=5.0)

        def ticked_to_unreachable() -> bool:
            """One tick of every reader; True once they call the node unreachable."""
            observed = _tick(state, board, book, len(seen))
            if observed is not None:
                seen.append(observed)
            return observed is not None and observed.state == "unreachable"

        async with SshFleet(targets, state.ingest, options):
            # The readers' tick cadence is the poll step.
            await wait_until(ticked_to_unreachable, 90.0, lambda: str(seen[-5:]), every_s=TICK_S)
    assert seen and seen[-1].state == "unreachable", seen[-5:]
    stale_after = STALE_INTERVALS * INTERVAL
    # Every reader says the same thing at every tick.
    for s in seen:
        assert (s.board_status, s.board_state) == (s.status, s.state), s
        assert s.recorded == s.state, s
    # Streaming (and up) until about 10 intervals of silence; never stale before.
    for s in seen:
        if s.silent_s < stale_after - TICK_S:
            assert (s.status, s.state) == ("streaming", "up"), s
    first_stale = next(s for s in seen if s.status == "stale")
    assert stale_after - TICK_S <= first_stale.silent_s <= stale_after + LATE_S, first_stale
    assert first_stale.state == "up"
    first_down = next(s for s in seen if s.state == "unreachable")
    assert UNREACHABLE_S - TICK_S <= first_down.silent_s <= UNREACHABLE_S + LATE_S, first_down
    assert first_down.status == "stale"  # an open channel: stale, not a failed attempt
    assert [i.state for i in book.intervals() if i.node == NODE][-2:] == ["up", "unreachable"]


def _tick(state: FleetState, board: ShardBoard, book: NodeStateBook, seq: int) -> Seen | None:
    """One controller tick: the state's snapshot, the board fed its summary, history."""
    now = time.time()
    snapshot = state.snapshot(now)
    node = snapshot.node(NODE)
    if node is None or node.sampled_at is None or node.last_seen is None:
        return None  # not sampled yet: connecting, which history calls unmonitored
    for part in summarize(0, 1, seq, TICK_S, snapshot.nodes, now):
        board.apply_summary(decode_summary(part), now)
    on_board = board.snapshot(now).node(NODE)
    assert on_board is not None
    book.apply(snapshot)
    return Seen(
        now - node.last_seen,
        node.status,
        node.state,
        on_board.status,
        on_board.state,
        recorded_state(node),
    )
