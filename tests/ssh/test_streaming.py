"""One connection and one agent channel per node, streaming into the sink."""

from __future__ import annotations

import asyncio

from collectors.protocol import Hello
from collectors.ssh import SshOptions
from testkit.loopback import NodeBehaviour
from testkit.loopback.harness import streaming_fleet as canned_fleet
from testkit.loopback.recorder import eventually


async def test_every_node_streams_hello_then_samples(fast_options: SshOptions) -> None:
    async with canned_fleet(3, fast_options) as (loopback, fleet, rec):
        names = list(loopback.nodes)
        await rec.wait_until(lambda: all(rec.samples[n] >= 3 for n in names), 10)
        assert fleet.tried_all
        for name in names:
            assert isinstance(rec.hellos[name], Hello)
            assert rec.hellos[name].host == name
            assert fleet.statuses()[name].status == "streaming"
            assert rec.statuses_seen(name)[:2] == ["connecting", "streaming"]
            node = loopback.nodes[name]
            # Tried first, found missing, uploaded once, then one long-lived channel.
            assert (node.uploads, node.execs) == (1, 2)
        seqs = [rec.last_sample[n].seq for n in names]
        assert min(seqs) >= 3


async def test_upload_lands_under_the_remote_cache_dir(fast_options: SshOptions) -> None:
    async with canned_fleet(1, fast_options, remote_cache_dir="~/cache/gf") as (lf, _, rec):
        await rec.wait_until(lambda: rec.samples["node-001"] >= 1, 10)
        home = lf.nodes["node-001"].home
        uploaded = home / "cache" / "gf" / "agent-0123456789ab.pyz"
        assert uploaded.read_bytes() == b"# canned nodes never run this\n"
        assert [p.name for p in uploaded.parent.iterdir()] == [uploaded.name]  # no temp left


async def test_slow_node_joins_late_without_holding_others(fast_options: SshOptions) -> None:
    slow = {"node-002": NodeBehaviour("slow", delay=1.5)}
    async with canned_fleet(3, fast_options, slow) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.samples["node-001"] >= 3, 10)
        assert rec.samples["node-002"] == 0
        await rec.wait_until(lambda: rec.samples["node-002"] >= 1, 10)
        assert fleet.statuses()["node-002"].status == "streaming"


async def test_silent_agent_is_reported_as_facts_not_judged(fast_options: SshOptions) -> None:
    # Whether a silent node is stale is the liveness rule's to say (fleet.health.liveness):
    # the transport reports an open channel on which no line came, and nothing more.
    silent = {"node-002": NodeBehaviour("silent")}
    async with canned_fleet(2, fast_options, silent) as (_, fleet, rec):
        session = fleet.session("node-002")
        assert session is not None
        await rec.wait_until(lambda: session.streaming_since is not None, 10)
        seen = rec.samples["node-001"]
        await rec.wait_until(lambda: rec.samples["node-001"] >= seen + 5, 10)
        assert rec.statuses_seen("node-002") == ["connecting"]
        assert session.last_line is None and session.last_sample is None
        assert fleet.statuses()["node-001"].status == "streaming"


async def test_slow_hello_goes_from_connecting_to_streaming(fast_options: SshOptions) -> None:
    # A hello later than a few intervals: the transport never calls the node stale.
    slow = {"node-001": NodeBehaviour("slow", delay=1.2)}
    async with canned_fleet(1, fast_options, slow) as (_, fleet, rec):
        await rec.wait_until(lambda: rec.samples["node-001"] >= 1, 10)
        assert rec.statuses_seen("node-001") == ["connecting", "streaming"]
        session = fleet.session("node-001")
        assert session is not None and session.last_line is not None


async def test_shutdown_leaves_no_task_and_no_connection(fast_options: SshOptions) -> None:
    async with canned_fleet(3, fast_options) as (loopback, fleet, rec):
        await rec.wait_until(lambda: all(rec.samples[n] >= 1 for n in loopback.nodes), 10)
        before = {t for t in asyncio.all_tasks() if t.get_name().startswith("ssh-")}
        assert len(before) == 3  # one task per node
        await fleet.stop()
        assert all(t.done() for t in before)
        assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("ssh-")]
        await eventually(lambda: not any(n.connections for n in loopback.nodes.values()), 5)
        count = rec.messages
        await fleet.stop()  # idempotent
        assert rec.messages == count
