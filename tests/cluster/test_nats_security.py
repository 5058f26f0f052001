"""NATS's own security with a real nats-server: users with subject permissions, a
private CA, client certificates; who may publish and ask what, and no secret shown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from cluster import bus
from cluster.attach import AttachedFleet
from cluster.auth import NatsAuth, redact
from cluster.bus import BusError, connect, ensure_event_stream
from cluster.nats_users import (
    authorization_block,
    hash_password,
    shard_user,
    tls_block,
    viewer_user,
)
from cluster.natsd import LocalNats, start_nats_server
from cluster.takeover import HEARTBEAT_WILDCARD, heartbeat_subject
from cluster.wire import EVENTS_WILDCARD, request_subject, summary_subject
from tests.cluster.certs import Pki, make_pki

PASSWORDS = {"shard-1": "s1-Pw.x7", "shard-2": "s2-Pw.y8", "viewer": "v-Pw.z9", "operator": "o-Pw"}


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
async def secured(tmp_path: Path, pki: Pki) -> AsyncIterator[LocalNats]:
    """TLS with client certificates required, and four users."""
    users = [
        shard_user("shard-1", hash_password(PASSWORDS["shard-1"]), 1),
        shard_user("shard-2", hash_password(PASSWORDS["shard-2"]), 2),
        viewer_user("viewer", hash_password(PASSWORDS["viewer"])),
        viewer_user("operator", hash_password(PASSWORDS["operator"]), operator=True),
    ]
    config = authorization_block(users) + tls_block(
        str(pki.server_cert), str(pki.server_key), str(pki.ca)
    )
    server = await start_nats_server(tmp_path / "nats", config=config, scheme="tls")
    try:
        yield server
    finally:
        await server.stop()


def auth_for(user: str, pki: Pki, *, password: str | None = None) -> NatsAuth:
    return NatsAuth(
        user=user,
        password=PASSWORDS[user] if password is None else password,
        tls_ca_file=pki.ca,
        tls_cert_file=pki.client_cert,
        tls_key_file=pki.client_key,
    )


class Violations:
    """The asynchronous -ERR lines a server sends a client (permission violations)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.event = asyncio.Event()

    async def on_error(self, exc: Exception) -> None:
        self.seen.append(str(exc))
        self.event.set()


async def client_as(server: LocalNats, auth: NatsAuth, violations: Violations) -> Client:
    nc = Client()
    await nc.connect(
        server.url,
        error_cb=violations.on_error,
        allow_reconnect=False,
        **auth.connect_options(server.url),
    )
    return nc


async def test_an_untrusted_server_is_refused_with_one_line_and_no_secret(
    secured: LocalNats, pki: Pki
) -> None:
    no_ca = NatsAuth(user="viewer", password=PASSWORDS["viewer"])  # the system store only
    with pytest.raises(BusError) as caught:
        await connect(secured.url, "t", no_ca)
    message = str(caught.value)
    assert "certificate not trusted" in message
    assert "\n" not in message
    assert PASSWORDS["viewer"] not in message


async def test_a_wrong_password_is_refused_without_showing_it(secured: LocalNats, pki: Pki) -> None:
    with pytest.raises(BusError) as caught:
        await connect(secured.url, "t", auth_for("viewer", pki, password="guess-Pw-1"))
    message = str(caught.value)
    assert "uthorization" in message  # nats-server: "Authorization Violation"
    assert "guess-Pw-1" not in message and "\n" not in message


async def test_a_password_in_the_url_is_never_shown() -> None:
    url = "nats://viewer:hunter2-Pw@127.0.0.1:1"  # nothing listens on port 1
    assert redact(url) == "nats://viewer:***@127.0.0.1:1"
    assert redact("nats://s3cr3t-token@h:4222") == "nats://***@h:4222"
    with pytest.raises(BusError) as caught:
        await connect(url, "t")
    assert "hunter2" not in str(caught.value)
    assert all("hunter2" not in notice for notice in AttachedFleet(url).notices)


async def test_shards_publish_only_their_own_subjects_and_viewers_none(
    secured: LocalNats, pki: Pki
) -> None:
    for user, subject in (
        ("shard-1", summary_subject(2)),  # another shard's summaries
        ("viewer", summary_subject(1)),  # a viewer forging a summary
        ("viewer", request_subject(1, "probe")),  # a read-only viewer asking for a probe
        ("operator", summary_subject(1)),  # operators ask; they do not publish the fleet
        ("shard-1", heartbeat_subject(2)),  # speaking for another shard's liveness
        ("viewer", heartbeat_subject(1)),  # a viewer keeping a dead shard "alive"
    ):
        violations = Violations()
        nc = await client_as(secured, auth_for(user, pki), violations)
        try:
            await nc.publish(subject, b"forged")
            await nc.flush()
            await asyncio.wait_for(violations.event.wait(), 10)
        finally:
            await nc.close()
        assert any(
            "permissions violation for publish" in line.lower() for line in violations.seen
        ), (
            user,
            violations.seen,
        )
        assert all(subject in line for line in violations.seen)


async def test_a_shard_hears_the_other_shards_heartbeats(secured: LocalNats, pki: Pki) -> None:
    # Takeover needs each shard to publish its own heartbeat and follow every shard's.
    violations = Violations()
    one = await client_as(secured, auth_for("shard-1", pki), violations)
    two = await client_as(secured, auth_for("shard-2", pki), violations)
    heard: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()

    async def on_beat(msg: Msg) -> None:
        await heard.put((msg.subject, msg.data))

    try:
        await two.subscribe(HEARTBEAT_WILDCARD, cb=on_beat)
        await two.flush()
        await one.publish(heartbeat_subject(1), b"beat")
        await one.flush()
        assert await asyncio.wait_for(heard.get(), 10) == (heartbeat_subject(1), b"beat")
    finally:
        await one.close()
        await two.close()
    assert violations.seen == []


async def request_once_subscribed(responder: Client, asker: Client, subject: str) -> Msg:
    """``asker``'s request on ``subject`` once ``responder``'s subscription is in place.

    The responder's PING round trip after its SUB does not always mean the server routes
    to it: on a loaded machine a request right after it was answered "no responders"
    (the server's own race, nats-server issue 2876). Each try follows another round trip;
    a request the permissions refuse fails every try.
    """
    for _ in range(4):
        await responder.flush()
        try:
            return await asker.request(subject, b"node-001", timeout=10)
        except NoRespondersError:
            continue
    await responder.flush()
    return await asker.request(subject, b"node-001", timeout=10)


async def test_an_operator_probe_request_reaches_the_owning_shard(
    secured: LocalNats, pki: Pki
) -> None:
    quiet = Violations()
    shard = await client_as(secured, auth_for("shard-1", pki), quiet)
    operator = await client_as(secured, auth_for("operator", pki), quiet)
    try:

        async def answer(msg: object) -> None:
            await msg.respond(b"ran")  # type: ignore[attr-defined]

        await shard.subscribe(request_subject(1, "probe"), cb=answer)
        reply = await request_once_subscribed(shard, operator, request_subject(1, "probe"))
    finally:
        await shard.close()
        await operator.close()
    assert reply.data == b"ran"
    assert quiet.seen == []


async def test_shard_events_reach_a_viewer_through_the_permissions(
    secured: LocalNats, pki: Pki
) -> None:
    """The JetStream API subjects granted are the ones nats-py really uses."""
    shard = await connect(secured.url, "shard", auth_for("shard-1", pki))
    viewer = await connect(secured.url, "viewer", auth_for("viewer", pki))
    got: asyncio.Queue[bytes] = asyncio.Queue()
    try:
        js = shard.jetstream()
        await ensure_event_stream(js)
        await js.publish("gpufleet.events.1", b"batch-1", timeout=10)

        async def on_event(msg: object) -> None:
            await got.put(msg.data)  # type: ignore[attr-defined]

        await viewer.jetstream().subscribe(EVENTS_WILDCARD, cb=on_event, ordered_consumer=True)
        assert await asyncio.wait_for(got.get(), 10) == b"batch-1"
        info = await js.stream_info("GPUFLEET_EVENTS")
    finally:
        await shard.close()
        await viewer.close()
    assert info.config.max_bytes and info.config.max_bytes > 0
    assert info.config.max_msg_size and info.config.max_msg_size > 0


def test_the_documented_server_configuration_is_the_one_tested() -> None:
    hashed = "$2a$11$<bcrypt hash>"
    users = [shard_user(f"shard-{k}", hashed, k) for k in (1, 2, 3)] + [
        viewer_user("viewer", hashed),
        viewer_user("operator", hashed, operator=True),
    ]
    server_tls = tls_block("/etc/nats/server.pem", "/etc/nats/server-key.pem", "/etc/nats/ca.pem")
    doc = (Path(__file__).parents[2] / "docs" / "scale-out.md").read_text()
    assert authorization_block(users) + "\n" + server_tls in doc


async def test_nats_without_credentials_warns_once(
    nats_server: LocalNats, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bus, "_warned_open", False)  # as in a fresh process
    caplog.set_level(logging.WARNING, logger="cluster.bus")
    for _ in range(2):
        nc = await connect(nats_server.url, "t")
        await nc.close()
    warnings = [r for r in caplog.records if "without credentials" in r.getMessage()]
    assert len(warnings) == 1
