"""Failing nodes: each gets its own status and retries; the others keep streaming."""

from __future__ import annotations

import pytest

from collectors.ssh import SshFleet, SshOptions
from collectors.updates import NodeMessage, NodeUpdate
from testkit.loopback import FAST_INTERVAL, LoopbackFleet, NodeBehaviour
from testkit.loopback.harness import streaming_fleet as canned_fleet
from testkit.loopback.recorder import UpdateRecorder


async def _good_nodes_keep_flowing(rec: UpdateRecorder, good: list[str]) -> None:
    """The healthy nodes' sample counts keep rising after the fault was seen."""
    counts = {name: rec.samples[name] for name in good}
    await rec.wait_until(lambda: all(rec.samples[n] >= counts[n] + 3 for n in good), 10)


async def test_hanging_node_times_out_as_unreachable(fast_options: SshOptions) -> None:
    hang = {"node-002": NodeBehaviour("hang")}
    async with canned_fleet(3, fast_options, hang) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-002") == "unreachable", 10)
        assert fleet.statuses()["node-002"].reason == "timed out connecting"
        assert fleet.tried_all
        await _good_nodes_keep_flowing(rec, ["node-001", "node-003"])
        assert rec.samples["node-002"] == 0


async def test_drop_mid_stream_is_unreachable_then_reconnects(fast_options: SshOptions) -> None:
    drop = {"node-001": NodeBehaviour("drop", after_lines=2)}
    async with canned_fleet(2, fast_options, drop) as (loopback, _, rec):
        node = loopback.nodes["node-001"]
        await rec.wait_until(lambda: rec.statuses_seen("node-001").count("streaming") >= 2, 10)
        seen = rec.statuses_seen("node-001")
        assert seen[seen.index("unreachable") + 1] == "streaming"  # reconnected
        reason = next(c.reason for c in rec.status_history["node-001"] if c.status == "unreachable")
        assert "lost" in reason or "disconnected" in reason or "closed" in reason
        assert node.execs >= 2
        assert node.uploads == 1  # the reconnect found the agent already there
        await _good_nodes_keep_flowing(rec, ["node-002"])


async def test_garbage_line_marks_only_that_node(fast_options: SshOptions) -> None:
    garbage = {"node-003": NodeBehaviour("garbage", after_lines=2)}
    async with canned_fleet(3, fast_options, garbage) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-003") == "protocol-error", 10)
        assert fleet.statuses()["node-003"].reason.startswith("not protocol v1:")
        await _good_nodes_keep_flowing(rec, ["node-001", "node-002"])
        assert all(fleet.statuses()[n].status == "streaming" for n in ("node-001", "node-002"))
        # It retries: the node streams good lines again before the next garbage.
        await rec.wait_until(lambda: rec.statuses_seen("node-003").count("protocol-error") >= 2, 10)


async def test_line_over_the_cap_is_a_protocol_error(fast_options: SshOptions) -> None:
    long_line = {"node-001": NodeBehaviour("long-line", after_lines=1)}
    async with canned_fleet(2, fast_options, long_line) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-001") == "protocol-error", 10)
        assert "cap" in fleet.statuses()["node-001"].reason
        await _good_nodes_keep_flowing(rec, ["node-002"])


async def test_agent_exit_is_agent_error_and_restarts(fast_options: SshOptions) -> None:
    crash = {"node-001": NodeBehaviour("exit", after_lines=2)}
    async with canned_fleet(2, fast_options, crash) as (loopback, _, rec):
        await rec.wait_until(lambda: rec.statuses_seen("node-001").count("agent-error") >= 2, 10)
        change = next(c for c in rec.status_history["node-001"] if c.status == "agent-error")
        assert "status 3" in change.reason
        assert "simulated agent crash" in change.reason
        node = loopback.nodes["node-001"]
        assert node.execs >= 2
        assert len(node.connections) == 1  # restarted on the same connection
        await _good_nodes_keep_flowing(rec, ["node-002"])


async def test_refused_key_is_auth_failed(fast_options: SshOptions) -> None:
    refuse = {"node-001": NodeBehaviour("auth-fail")}
    async with canned_fleet(2, fast_options, refuse) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-001") == "auth-failed", 10)
        assert fleet.statuses()["node-001"].reason.startswith("authentication failed")
        await _good_nodes_keep_flowing(rec, ["node-002"])


async def test_server_restart_reconnects(fast_options: SshOptions) -> None:
    async with canned_fleet(2, fast_options) as (loopback, fleet, rec):
        await rec.wait_until(lambda: rec.samples["node-001"] >= 2, 10)
        port = loopback.nodes["node-001"].port
        await loopback.stop_node("node-001")
        await rec.wait_until(lambda: rec.status("node-001") == "unreachable", 10)
        await rec.wait_until(lambda: "refused" in fleet.statuses()["node-001"].reason, 10)
        await loopback.start_node("node-001")
        assert loopback.nodes["node-001"].port == port
        before = rec.samples["node-001"]
        await rec.wait_until(lambda: rec.samples["node-001"] > before, 10)
        assert fleet.statuses()["node-001"].status == "streaming"


async def test_a_failing_sink_is_logged_once_and_streaming_goes_on(
    fast_options: SshOptions, caplog: pytest.LogCaptureFixture
) -> None:
    rec = UpdateRecorder()

    def fussy(update: NodeUpdate) -> None:
        rec(update)
        if isinstance(update, NodeMessage):
            raise RuntimeError("consumer bug")

    async with LoopbackFleet(2, gpus=2, mode="canned") as loopback:
        targets = loopback.targets(interval=FAST_INTERVAL)
        async with SshFleet(targets, fussy, fast_options) as fleet:
            await rec.wait_until(lambda: all(rec.samples[n] >= 4 for n in loopback.nodes), 10)
            assert {s.status for s in fleet.statuses().values()} == {"streaming"}
    sink_errors = [r for r in caplog.records if "update sink raised" in r.getMessage()]
    assert sorted(r.getMessage() for r in sink_errors) == [
        "node node-001: the update sink raised",
        "node node-002: the update sink raised",
    ]
