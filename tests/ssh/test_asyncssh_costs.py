"""asyncssh's per-packet log formatting and keepalive re-arm made free (ssh/asyncssh_costs).

Real asyncssh servers on loopback; a TCP relay between client and server stands in
for a link that goes silent (it keeps both sockets open and forwards nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncssh
import asyncssh.connection
import pytest
from asyncssh.connection import SSHConnection
from asyncssh.packet import SSHPacketLogger

import collectors.ssh  # noqa: F401  (importing the transport installs the changes)
from collectors.ssh import asyncssh_costs
from testkit.loopback.recorder import eventually
from testkit.loopback.relay import LoopbackRelay

ROUNDS = 60
INTERVAL = 0.2
COUNT_MAX = 2


class _OpenServer(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # loopback test server: no authentication


async def _echo(process: asyncssh.SSHServerProcess[bytes]) -> None:
    async for line in process.stdin:
        process.stdout.write(line)


class _Client(asyncssh.SSHClient):
    def __init__(self) -> None:
        self.lost: Exception | None = None
        self.closed = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc
        self.closed.set()


@contextlib.asynccontextmanager
async def _echo_link(
    **client_options: Any,
) -> AsyncIterator[tuple[asyncssh.SSHClientConnection, _Client, LoopbackRelay, Callable[[], Any]]]:
    """A client connected through a relay to an echo server; yields an echo round trip."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[key],
        server_factory=_OpenServer,
        process_factory=_echo,
        encoding=None,
    )
    relay = LoopbackRelay(server.get_port())
    port = await relay.start()
    client = _Client()
    conn, _ = await asyncssh.create_connection(
        lambda: client, "127.0.0.1", port, known_hosts=None, username="u", **client_options
    )
    writer, reader, _ = await conn.open_session(encoding=None)

    async def round_trip() -> None:
        writer.write(b"ping\n")
        assert await asyncio.wait_for(reader.readline(), 10) == b"ping\n"

    try:
        yield conn, client, relay, round_trip
    finally:
        conn.close()
        await relay.close()
        server.close()


def test_the_changes_are_installed_and_asyncssh_has_what_they_replace() -> None:
    asyncssh_costs.check_asyncssh()  # raises naming what an upgrade moved
    assert asyncssh_costs.installed()
    assert SSHConnection.__dict__["_keepalive_timer_callback"].__module__ == asyncssh_costs.__name__


async def test_the_connection_has_the_attributes_the_lazy_keepalive_reads() -> None:
    async with _echo_link() as (conn, _client, _relay, round_trip):
        await round_trip()
        missing = [name for name in asyncssh_costs.CONNECTION_ATTRIBUTES if not hasattr(conn, name)]
        assert missing == []


def _keepalive_arms(
    conn: SSHConnection, monkeypatch: pytest.MonkeyPatch
) -> list[Callable[..., Any]]:
    """Every ``call_later`` the connection makes from now on (only its keepalive uses it)."""
    loop = asyncio.get_running_loop()
    original = loop.call_later
    armed: list[Callable[..., Any]] = []

    def counting(delay: float, callback: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        if getattr(callback, "__self__", None) is conn:
            armed.append(callback)
        return original(delay, callback, *args, **kw)

    monkeypatch.setattr(loop, "call_later", counting)
    return armed


async def test_reads_arm_no_keepalive_timer_each(monkeypatch: pytest.MonkeyPatch) -> None:
    async with _echo_link(keepalive_interval=30) as (conn, _client, _relay, round_trip):
        await round_trip()
        armed = _keepalive_arms(conn, monkeypatch)
        for _ in range(ROUNDS):
            await round_trip()
        assert armed == []
        assert conn._keepalive_timer is not None and not conn._keepalive_timer.cancelled()

        # The control: asyncssh's own re-arm schedules a timer for every read.
        asyncssh_costs.uninstall()
        try:
            for _ in range(ROUNDS):
                await round_trip()
        finally:
            asyncssh_costs.install()
        assert len(armed) >= ROUNDS


async def test_packets_are_not_formatted_for_the_log_below_debug_level_3(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    formatted: list[int] = []
    log_packet = SSHPacketLogger._log_packet

    def counting(self: SSHPacketLogger, *args: Any) -> None:
        formatted.append(args[1])
        log_packet(self, *args)

    monkeypatch.setattr(SSHPacketLogger, "_log_packet", counting)
    caplog.set_level(logging.DEBUG, logger="asyncssh")
    async with _echo_link() as (_conn, _client, _relay, round_trip):
        for _ in range(ROUNDS):
            await round_trip()
        assert formatted == []
        assert not any("MSG_CHANNEL_DATA" in record.getMessage() for record in caplog.records)

        asyncssh.set_debug_level(3)
        try:
            await round_trip()
        finally:
            asyncssh.set_debug_level(1)
    dumps = [record.getMessage() for record in caplog.records]
    assert any("] Received MSG_CHANNEL_DATA (94), " in text for text in dumps), dumps
    assert any("] Sent MSG_CHANNEL_DATA (94), " in text for text in dumps), dumps
    assert formatted != []


def _keepalives_sent(caplog: pytest.LogCaptureFixture) -> int:
    sent = [r for r in caplog.records if r.getMessage().endswith("] Sending keepalive request")]
    return len(sent)


async def test_a_link_gone_silent_is_closed_after_the_unanswered_keepalives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncssh")
    options = {"keepalive_interval": INTERVAL, "keepalive_count_max": COUNT_MAX}
    async with _echo_link(**options) as (_conn, client, relay, round_trip):
        for _ in range(ROUNDS):  # reads after the timer was armed: the re-arm path
            await round_trip()
        caplog.clear()
        relay.silence()
        await asyncio.wait_for(client.closed.wait(), 30)
        assert "not responding to keepalive" in str(client.lost)
        # As asyncssh: count_max unanswered requests, then the close on the next expiry.
        assert _keepalives_sent(caplog) == COUNT_MAX


async def test_an_answering_server_keeps_an_idle_link_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncssh")
    options = {"keepalive_interval": INTERVAL, "keepalive_count_max": COUNT_MAX}
    async with _echo_link(**options) as (_conn, client, _relay, round_trip):
        await round_trip()
        # More keepalive rounds than a silent link survives, each answered.
        await eventually(lambda: _keepalives_sent(caplog) >= COUNT_MAX + 3, 30)
        answered = sum(r.getMessage().endswith("] Got keepalive response") for r in caplog.records)
        assert answered >= COUNT_MAX + 2
        assert not client.closed.is_set()
        await round_trip()


async def test_keepalive_turned_off_on_an_open_link_leaves_no_timer() -> None:
    async with _echo_link(keepalive_interval=30) as (conn, _client, _relay, round_trip):
        await round_trip()
        assert conn._keepalive_timer is not None
        conn.set_keepalive(0)
        await round_trip()
        assert conn._keepalive_timer is None
        conn.set_keepalive(0.5)  # and back on: armed at the new interval
        await round_trip()
        timer = conn._keepalive_timer
        assert timer is not None
        assert timer.when() <= asyncio.get_running_loop().time() + 0.5


async def test_asyncssh_sees_an_isawaitable_that_agrees_with_inspect() -> None:
    seen = asyncssh.connection.inspect.isawaitable
    assert seen is not inspect.isawaitable  # installed

    class Custom:
        def __await__(self) -> Any:
            yield

    async def coroutine() -> None:
        return None

    future = asyncio.get_running_loop().create_future()
    running = coroutine()
    values: list[object] = [True, False, None, 0, 1, b"", "x", future, running, Custom()]
    try:
        assert [seen(value) for value in values] == [inspect.isawaitable(v) for v in values]
        assert [seen(value) for value in values][-3:] == [True, True, True]
    finally:
        running.close()


def test_an_asyncssh_without_what_is_replaced_is_named_and_left_as_shipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    asyncssh_costs.uninstall()
    try:
        with monkeypatch.context() as changed:
            changed.delattr(SSHConnection, "set_keepalive")
            with pytest.raises(RuntimeError, match=r"SSHConnection\.set_keepalive missing"):
                asyncssh_costs.check_asyncssh()
            asyncssh_costs.install()  # the monitor: a warning, asyncssh as shipped
            assert not asyncssh_costs.installed()
            assert asyncssh.connection.inspect is inspect
            assert "SSHConnection.set_keepalive missing" in caplog.text
    finally:
        asyncssh_costs.install()
    assert asyncssh_costs.installed()
