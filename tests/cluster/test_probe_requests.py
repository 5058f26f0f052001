"""Who may make a shard run a probe through NATS (real nats-server): nobody over a
server without credentials, one probe per node at a time, and the shard logs who asked."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest

from cluster.auth import NatsAuth
from cluster.bus import connect
from cluster.natsd import LocalNats, start_nats_server
from cluster.probe_wire import ProbeReply, ProbeRequest
from cluster.publisher import ShardPublisher
from cluster.shards import ShardSpec
from cluster.wire import encode, request_subject
from gpufleet.demo_shards import OPERATOR, make_credentials, shard_user_name


class ProbeCountingFleet:
    """Only what a shard's publisher calls; ``probe`` waits for ``release`` and counts."""

    def __init__(self) -> None:
        self.probed: list[str] = []
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    def subscribe(self, listener: Callable[..., None]) -> Callable[[], None]:
        return lambda: None

    def latest(self) -> None:
        return None

    async def probe(self, node: str, suite: str, listener: object = None) -> object:
        self.probed.append(node)
        self.started.set()
        await self.release.wait()
        raise RuntimeError("no report in this test")


async def ask(url: str, auth: NatsAuth | None, node: str) -> ProbeReply:
    nc = await connect(url, "asker", auth)
    try:
        raw = await nc.request(
            request_subject(1, "probe"), encode(ProbeRequest(node, operator="alice@ops")), 30
        )
    finally:
        await nc.close()
    return msgspec.json.decode(
        msgspec.json.encode(msgspec.msgpack.decode(raw.data)), type=ProbeReply
    )


async def test_no_probe_runs_for_a_request_over_nats_without_credentials(
    nats_server: LocalNats,
) -> None:
    fleet = ProbeCountingFleet()
    shard = ShardPublisher(fleet, ShardSpec(1, 1), nats_server.url, 1.0)  # type: ignore[arg-type]
    await shard.start()
    try:
        reply = await ask(nats_server.url, None, "node-001")
    finally:
        await shard.stop()
    assert reply.error is not None and "authenticated NATS" in reply.error
    assert fleet.probed == [] and shard.refused_probes == 1


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[LocalNats, dict[str, Path]]]:
    authorization, passwords = make_credentials(tmp_path / "credentials", 1)
    server = await start_nats_server(tmp_path / "nats", config=authorization)
    try:
        yield server, passwords
    finally:
        await server.stop()


def login(passwords: dict[str, Path], user: str) -> NatsAuth:
    return NatsAuth(user=user, password=passwords[user].read_text().strip())


async def test_one_probe_per_node_and_the_operator_is_logged(
    secured: tuple[LocalNats, dict[str, Path]], caplog: pytest.LogCaptureFixture
) -> None:
    server, passwords = secured
    fleet = ProbeCountingFleet()
    shard = ShardPublisher(
        fleet,  # type: ignore[arg-type]
        ShardSpec(1, 1),
        server.url,
        1.0,
        auth=login(passwords, shard_user_name(1)),
    )
    operator = login(passwords, OPERATOR)
    await shard.start()
    caplog.set_level(logging.WARNING, logger="cluster.publisher")
    try:
        first = asyncio.create_task(ask(server.url, operator, "node-001"))
        await asyncio.wait_for(fleet.started.wait(), 30)
        second = await ask(server.url, operator, "node-001")
        fleet.release.set()
        done = await first
    finally:
        await shard.stop()
    assert second.error is not None and "already running" in second.error
    assert done.error == "no report in this test"
    assert fleet.probed == ["node-001"] and shard.refused_probes == 1
    assert "probe (quick) of node-001 requested by alice@ops" in caplog.text
