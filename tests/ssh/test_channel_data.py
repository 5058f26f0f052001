"""Channel data on the fast path (ssh/channel_data): what asyncssh would deliver, as it would.

Real asyncssh servers on loopback write a seeded stream of small and large chunks to
stdout and stderr (testkit.loopback.byte_stream). Each case runs with the fast path
and with asyncssh as shipped (``channel_data.uninstall()``) and compares the two, and
counts the data packets asyncssh's own handlers saw, so a fast path never taken
cannot pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncssh
import pytest
from asyncssh.connection import SSHConnection

import collectors.ssh  # noqa: F401  (importing the transport installs the fast path)
from collectors.ssh import channel_data
from collectors.ssh import channel_data_check as check
from collectors.ssh.stream import AGENT_WINDOW, AgentChannel
from testkit.loopback import byte_stream
from testkit.loopback.byte_stream import (
    FlippingRelay,
    HandlerCounts,
    ReadCutter,
    StreamRecorder,
    coalesced,
    script,
)
from testkit.loopback.recorder import eventually

GCM = "aes128-gcm@openssh.com"
AEAD_CIPHERS = (GCM, "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com")
STREAM_BYTES = 600_000
SEED = 11
WITHIN = 60.0
WINDOW = 2 * 1024 * 1024  # asyncssh's default
ENDING = ["exit 0", "lost None"]


@dataclass
class Run:
    """What one stream delivered, and what asyncssh's handlers and the reads saw."""

    recorder: StreamRecorder
    counts: HandlerCounts
    cutter: ReadCutter | None
    packets: int  # the connection's receive sequence number at the end
    writes: int  # the client's transport writes from the session's open to its end


@contextlib.asynccontextmanager
async def _fast_path(on: bool) -> AsyncIterator[None]:
    if not on:
        channel_data.uninstall()
    try:
        yield
    finally:
        channel_data.install()


async def _stream(
    monkeypatch: pytest.MonkeyPatch,
    fast: bool,
    *,
    cipher: str = GCM,
    total: int = STREAM_BYTES,
    window: int = WINDOW,
    cut: bool = True,
    server_options: dict[str, Any] | None = None,
    client_options: dict[str, Any] | None = None,
    pause_after: int | None = None,
) -> Run:
    server = await byte_stream.listen(encryption_algs=[cipher], **(server_options or {}))
    async with _fast_path(fast):
        with monkeypatch.context() as patched:
            counts = HandlerCounts(patched)
            conn = await asyncssh.connect(
                "127.0.0.1",
                server.get_port(),
                known_hosts=None,
                username="u",
                encryption_algs=[cipher],
                **(client_options or {}),
            )
            cutter = ReadCutter(conn, seed=SEED) if cut else None
            writes = _count_writes(conn)
            recorder = StreamRecorder(pause_after)
            await conn.create_session(
                lambda: recorder, f"stream {SEED} {total}", encoding=None, window=window
            )
            if pause_after is not None:
                # Paused: asyncssh buffers the rest, EOF or close included, until the resume.
                ended = ("eof_pending", "close_pending")
                await eventually(lambda: recorder.chan._recv_state in ended, WITHIN)
                assert recorder.chan._recv_buf
                recorder.chan.resume_reading()
            await asyncio.wait_for(recorder.closed.wait(), WITHIN)
            packets = conn._recv_seq
            conn.close()
            await conn.wait_closed()
    server.close()
    return Run(recorder, counts, cutter, packets, len(writes))


def _count_writes(conn: Any) -> list[int]:
    transport = conn._transport
    write, writes = transport.write, []

    def counted(data: bytes) -> None:
        writes.append(len(data))
        write(data)

    transport.write = counted
    return writes


def _data_packets(run: Run) -> int:
    return len(run.recorder.chunks)


def _ending(run: Run) -> list[str]:
    # Whether the server's EOF precedes its close depends on when its last write
    # drained (server side timing), with or without the fast path.
    return [event for event in run.recorder.events if event != "eof"]


@pytest.mark.parametrize("cipher", [*AEAD_CIPHERS, "aes128-ctr"])
async def test_the_same_bytes_arrive_in_the_same_deliveries_with_and_without_the_fast_path(
    monkeypatch: pytest.MonkeyPatch, cipher: str
) -> None:
    fast = await _stream(monkeypatch, True, cipher=cipher)
    shipped = await _stream(monkeypatch, False, cipher=cipher)
    expected = coalesced(script(SEED, STREAM_BYTES))
    assert coalesced(fast.recorder.chunks) == expected
    assert fast.recorder.chunks == shipped.recorder.chunks  # packet for packet
    # Less than half the window: no adjust, and the window took every byte.
    assert fast.recorder.windows[-1] == shipped.recorder.windows[-1] == WINDOW - STREAM_BYTES
    assert fast.counts.adjusts == shipped.counts.adjusts == []
    assert fast.packets == shipped.packets  # sequence numbers counted alike
    assert _ending(fast) == _ending(shipped) == ENDING
    # The reads: packets split across them, and several packets completed by one.
    for run in (fast, shipped):
        assert run.cutter is not None
        assert any(run.cutter.left_over) and max(run.cutter.packets_per_piece) >= 2
    assert shipped.counts.data + shipped.counts.extended == _data_packets(shipped)
    if cipher in AEAD_CIPHERS:
        assert fast.counts.data < _data_packets(fast) // 2  # most took the fast path
        stderr_packets = sum(datatype is not None for datatype, _ in fast.recorder.chunks)
        assert fast.counts.extended < stderr_packets
    else:  # a cipher with a MAC: asyncssh's own path, every packet
        assert fast.counts.data + fast.counts.extended == _data_packets(fast)


async def test_a_paused_channel_buffers_and_delivers_in_order_on_resume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = await _stream(monkeypatch, True, pause_after=50_000, cut=False)
    shipped = await _stream(monkeypatch, False, pause_after=50_000, cut=False)
    assert coalesced(fast.recorder.chunks) == coalesced(script(SEED, STREAM_BYTES))
    assert fast.recorder.chunks == shipped.recorder.chunks
    assert _ending(fast) == _ending(shipped) == ENDING
    assert fast.counts.data < _data_packets(fast)  # before the pause
    assert fast.counts.data > 0  # buffered while paused: asyncssh's path


@pytest.mark.parametrize("cipher", [GCM, "chacha20-poly1305@openssh.com"])
async def test_a_small_window_is_adjusted_so_the_server_sends_many_windows(
    monkeypatch: pytest.MonkeyPatch, cipher: str
) -> None:
    total = 64 * AGENT_WINDOW
    fast = await _stream(monkeypatch, True, cipher=cipher, total=total, window=AGENT_WINDOW)
    shipped = await _stream(monkeypatch, False, cipher=cipher, total=total, window=AGENT_WINDOW)
    for run in (fast, shipped):
        assert coalesced(run.recorder.chunks) == coalesced(script(SEED, total))
        # asyncssh's rule: adjust back to the full window once less than half is left.
        adjusts = run.counts.adjusts
        assert len(adjusts) >= total // AGENT_WINDOW
        assert all(AGENT_WINDOW // 2 < adjust <= AGENT_WINDOW for adjust in adjusts)
        assert run.recorder.windows[-1] == AGENT_WINDOW - total + sum(adjusts)
    assert fast.counts.data < _data_packets(fast) // 2
    assert shipped.counts.data + shipped.counts.extended == _data_packets(shipped)
    # An adjust (after asyncssh's ignore message) is one write on the fast path, two on
    # asyncssh's (as for an adjust the fast path left to asyncssh, and the session's
    # opening and closing packets).
    assert shipped.writes >= 2 * len(shipped.counts.adjusts)
    assert fast.writes < 1.5 * len(fast.counts.adjusts)


@pytest.mark.parametrize("side", ["server", "client"])
async def test_a_rekey_forced_mid_stream_keeps_the_stream_intact(
    monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    # The server rekeys after 100 KB it sent; the client after 500 B of window adjusts.
    rekey = {"server_options": {"rekey_bytes": 100_000}} if side == "server" else {}
    if side == "client":
        rekey = {"client_options": {"rekey_bytes": 500}}
    total = 2 * 1024 * 1024
    run = await _stream(monkeypatch, True, total=total, window=AGENT_WINDOW, **rekey)
    assert coalesced(run.recorder.chunks) == coalesced(script(SEED, total))
    assert len(run.recorder.ciphers) >= 3  # new keys at least twice while streaming
    assert run.counts.data < _data_packets(run) // 2
    assert _ending(run) == ENDING


async def test_stderr_reaches_the_exit_reason() -> None:
    server = await byte_stream.listen(encryption_algs=[GCM])
    lines: list[bytes] = []
    conn = await asyncssh.connect(
        "127.0.0.1", server.get_port(), known_hosts=None, username="u", encryption_algs=[GCM]
    )
    # Seed 5 writes stderr among its first chunks; the agent channel keeps its last lines.
    stderr = [data for datatype, data in script(5, 200_000) if datatype is not None]
    assert stderr
    _, session = await conn.create_session(
        lambda: AgentChannel(lines.append), "stream 5 200000", encoding=None
    )
    reason = await asyncio.wait_for(session.ended, WITHIN)
    conn.close()
    server.close()
    assert str(reason).startswith("agent exited with status 0: ")
    last = stderr[-1].decode("utf-8", "replace").splitlines()
    assert last and any(line.strip()[:50] in str(reason) for line in last if line.strip())


async def _corrupted(fast: bool) -> BaseException | None:
    server = await byte_stream.listen(encryption_algs=[GCM])
    relay = FlippingRelay(server.get_port())
    port = await relay.start()
    lost: list[BaseException | None] = []

    class Client(asyncssh.SSHClient):
        def connection_lost(self, exc: Exception | None) -> None:
            lost.append(exc)

    async with _fast_path(fast):
        conn, _ = await asyncssh.create_connection(
            Client, "127.0.0.1", port, known_hosts=None, username="u", encryption_algs=[GCM]
        )
        recorder = StreamRecorder()
        chan, _ = await conn.create_session(
            lambda: recorder, f"wait stream {_LARGE_FIRST} 100000", encoding=None
        )
        relay.flip_after(200)  # inside the first data packet's ciphertext
        chan.write(b"go\n")
        await asyncio.wait_for(recorder.closed.wait(), WITHIN)
        await conn.wait_closed()
    await relay.close()
    server.close()
    assert recorder.chunks == []
    return lost[0] if lost else None


# A seed whose stream starts with a stdout write larger than a line.
_LARGE_FIRST = next(
    seed
    for seed in range(100)
    if script(seed, 100_000)[0][0] is None and len(script(seed, 100_000)[0][1]) >= 1700
)


async def test_a_corrupted_packet_closes_the_connection_with_a_mac_error() -> None:
    fast, shipped = await _corrupted(True), await _corrupted(False)
    assert isinstance(fast, asyncssh.MACError) and isinstance(shipped, asyncssh.MACError)
    assert str(fast) == str(shipped) == "MAC verification failed"


async def test_asyncssh_is_the_one_the_fast_path_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check.check_fast_path()
    assert channel_data.installed()
    assert SSHConnection._recv_data.__module__ == channel_data.__name__
    server = await byte_stream.listen(encryption_algs=[GCM])
    conn = await asyncssh.connect(
        "127.0.0.1", server.get_port(), known_hosts=None, username="u", encryption_algs=[GCM]
    )
    recorder = StreamRecorder()
    chan, _ = await conn.create_session(lambda: recorder, "wait stream 1 10", encoding=None)
    encryption = conn._recv_encryption
    live = [
        (conn, check.CONNECTION_ATTRIBUTES),
        (chan, check.CHANNEL_ATTRIBUTES),
    ]
    live += [
        (encryption, check.CIPHER_ATTRIBUTES[type(encryption)]),
        (encryption._cipher, check.CIPHER_ATTRIBUTES[type(encryption._cipher)]),
    ]
    missing = [name for obj, names in live for name in names if not hasattr(obj, name)]
    assert missing == []
    conn.close()
    server.close()


def test_an_asyncssh_that_changed_is_named_and_left_as_shipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    channel_data.uninstall()
    try:
        with monkeypatch.context() as changed:
            name = "SSHClientChannel._accept_data"
            changed.setitem(check.MIRRORED, name, (SSHConnection.close, "0" * 16))
            with pytest.raises(RuntimeError, match=r"SSHClientChannel\._accept_data"):
                check.check_fast_path()
            with caplog.at_level(logging.WARNING):
                channel_data.install()  # the monitor: a warning, asyncssh as shipped
            assert not channel_data.installed()
            assert SSHConnection._recv_data.__module__ == "asyncssh.connection"
            assert name in caplog.text
    finally:
        channel_data.install()
    assert channel_data.installed()
