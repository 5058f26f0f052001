"""Host keys are verified by default; accept-new records unknown keys, never changed ones."""

from __future__ import annotations

from pathlib import Path

import asyncssh

from collectors.ssh import SshFleet, SshOptions
from collectors.ssh.connect import connect_node
from testkit.loopback import LoopbackFleet, NodeBehaviour
from testkit.loopback.harness import FAST_INTERVAL as INTERVAL
from testkit.loopback.harness import streaming_fleet as canned_fleet
from testkit.loopback.recorder import UpdateRecorder


def _read(path: str) -> str:
    return Path(path).read_text()


async def test_wrong_host_key_names_host_and_fingerprint(fast_options: SshOptions) -> None:
    impostor = {"node-002": NodeBehaviour("wrong-host-key")}
    async with canned_fleet(2, fast_options, impostor) as (loopback, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-002") == "host-key-mismatch", 10)
        reason = fleet.statuses()["node-002"].reason
        port = loopback.nodes["node-002"].port
        assert f"node-002 (127.0.0.1:{port})" in reason
        assert loopback.impostor_host_key.get_fingerprint() in reason
        assert rec.samples["node-002"] == 0
        await rec.wait_until(lambda: rec.samples["node-001"] >= 2, 10)


async def test_unknown_host_is_refused_under_strict(
    fast_options: SshOptions, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    async with canned_fleet(1, fast_options, known_hosts=str(empty)) as (lf, fleet, rec):
        await rec.wait_until(lambda: rec.status("node-001") == "host-key-mismatch", 10)
        assert lf.host_key.get_fingerprint() in fleet.statuses()["node-001"].reason
        assert empty.read_text() == ""


async def test_accept_new_records_the_key_then_trusts_it(
    fast_options: SshOptions, tmp_path: Path
) -> None:
    known = tmp_path / "ssh" / "known_hosts"  # the directory does not exist yet
    async with canned_fleet(
        2, fast_options, known_hosts=str(known), host_key_policy="accept-new"
    ) as (loopback, _, rec):
        await rec.wait_until(lambda: all(rec.samples[n] >= 1 for n in loopback.nodes), 10)
        recorded = asyncssh.read_known_hosts(str(known))
        for node in loopback.nodes.values():
            keys, *_ = recorded.match("127.0.0.1", "", node.port)
            assert [k.public_data for k in keys] == [loopback.host_key.public_data]
        lines = known.read_text().splitlines()
        assert len(lines) == 2
        # The recorded file now verifies strictly.
        target = loopback.targets(known_hosts=str(known), interval=INTERVAL)[0]
        conn = await connect_node(target, fast_options)
        conn.close()
        await conn.wait_closed()
        assert known.read_text().splitlines() == lines


async def test_accept_new_still_refuses_a_changed_key(
    fast_options: SshOptions, tmp_path: Path
) -> None:
    impostor = {"node-001": NodeBehaviour("wrong-host-key")}
    async with LoopbackFleet(1, gpus=2, mode="canned", behaviours=impostor) as loopback:
        known = loopback.known_hosts  # lists the genuine key for node-001's port
        before = _read(known)
        rec = UpdateRecorder()
        targets = loopback.targets(host_key_policy="accept-new", interval=INTERVAL)
        async with SshFleet(targets, rec, fast_options) as fleet:
            await rec.wait_until(lambda: rec.status("node-001") == "host-key-mismatch", 10)
            assert "not trusted" in fleet.statuses()["node-001"].reason
        assert _read(known) == before


async def test_trusted_key_list_instead_of_a_file(fast_options: SshOptions) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        rec = UpdateRecorder()
        targets = loopback.targets(known_hosts=(loopback.host_key,), interval=INTERVAL)
        async with SshFleet(targets, rec, fast_options):
            await rec.wait_until(lambda: rec.samples["node-001"] >= 1, 10)
