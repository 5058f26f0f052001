"""Reaching a node through a bastion, verified and authenticated like any node."""

from __future__ import annotations

import getpass

from collectors.ssh import SshFleet, SshOptions
from testkit.loopback import LoopbackFleet, NodeBehaviour, UpdateRecorder, eventually
from testkit.loopback.harness import FAST_INTERVAL


async def test_node_streams_through_a_jump_host(fast_options: SshOptions) -> None:
    async with LoopbackFleet(2, gpus=2, mode="canned") as loopback:
        bastion = loopback.nodes["node-001"]
        jump = f"{getpass.getuser()}@127.0.0.1:{bastion.port}"
        targets = loopback.targets(interval=FAST_INTERVAL, jump_host=jump)[1:]  # node-002 only
        rec = UpdateRecorder()
        async with SshFleet(targets, rec, fast_options):
            await rec.wait_until(lambda: rec.samples["node-002"] >= 2, 10)
            assert len(bastion.connections) == 1  # the tunnel, not an agent
            assert bastion.execs == 0
            assert loopback.nodes["node-002"].execs >= 1
        # The tunnel closes together with the node's connection.
        await eventually(lambda: not bastion.connections, 5)


async def test_untrusted_jump_host_is_named(fast_options: SshOptions) -> None:
    impostor = {"node-001": NodeBehaviour("wrong-host-key")}
    async with LoopbackFleet(2, gpus=2, mode="canned", behaviours=impostor) as loopback:
        bastion_port = loopback.nodes["node-001"].port
        jump = f"127.0.0.1:{bastion_port}"
        targets = loopback.targets(interval=FAST_INTERVAL, jump_host=jump)[1:]
        rec = UpdateRecorder()
        async with SshFleet(targets, rec, fast_options) as fleet:
            await rec.wait_until(lambda: rec.status("node-002") == "host-key-mismatch", 10)
            reason = fleet.statuses()["node-002"].reason
        assert f"node-002 (jump host 127.0.0.1) (127.0.0.1:{bastion_port})" in reason
        assert loopback.impostor_host_key.get_fingerprint() in reason
        assert loopback.nodes["node-002"].execs == 0
