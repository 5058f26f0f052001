"""Channel data on the fast path (ssh/channel_data): what asyncssh would deliver, as it would.

Real asyncssh servers on loopback write a seeded stream of small and large chunks to
stdout and stderr (testkit.loopback.byte_stream). Each case runs with the fast path
and with asyncssh as shipped (``channel_data.uninstall()``) and compares the two, and
counts the data packets asyncssh's own handlers saw, so a fast path never taken
cannot pass.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncssh
import pytest

import collectors.ssh  # noqa: F401  (importing the transport installs the fast path)
from collectors.ssh.stream import AGENT_WINDOW
from testkit.loopback import byte_stream
from testkit.loopback.byte_stream import (
    ENDING,
    HandlerCounts,
    ReadCutter,
    Run,
    StreamRecorder,
    coalesced,
    count_writes,
    fast_path,
    script,
)
from testkit.loopback.recorder import eventually

GCM = "aes128-gcm@openssh.com"
AEAD_CIPHERS = (GCM, "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com")
STREAM_BYTES = 600_000
SEED = 11
WITHIN = 60.0
WINDOW = 2 * 1024 * 1024  # asyncssh's default


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
    seed: int = SEED,
) -> Run:
    server = await byte_stream.listen(encryption_algs=[cipher], **(server_options or {}))
    async with fast_path(fast):
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
            cutter = ReadCutter(conn, seed=seed) if cut else None
            writes = count_writes(conn)
            recorder = StreamRecorder(pause_after)
            await conn.create_session(
                lambda: recorder, f"stream {seed} {total}", encoding=None, window=window
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


@pytest.mark.parametrize("cipher", [*AEAD_CIPHERS, "aes128-ctr"])
async def test_the_same_bytes_arrive_in_the_same_deliveries_with_and_without_thefast_path(
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
    assert fast.ending == shipped.ending == ENDING
    # The reads: packets split across them, and several packets completed by one.
    for run in (fast, shipped):
        assert run.cutter is not None
        assert any(run.cutter.left_over) and max(run.cutter.packets_per_piece) >= 2
    assert shipped.counts.data + shipped.counts.extended == shipped.data_packets
    if cipher in AEAD_CIPHERS:
        assert fast.counts.data < fast.data_packets // 2  # most took the fast path
        stderr_packets = sum(datatype is not None for datatype, _ in fast.recorder.chunks)
        assert fast.counts.extended < stderr_packets
    else:  # a cipher with a MAC: asyncssh's own path, every packet
        assert fast.counts.data + fast.counts.extended == fast.data_packets


async def test_a_paused_channel_buffers_and_delivers_in_order_on_resume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = await _stream(monkeypatch, True, pause_after=50_000, cut=False)
    shipped = await _stream(monkeypatch, False, pause_after=50_000, cut=False)
    assert coalesced(fast.recorder.chunks) == coalesced(script(SEED, STREAM_BYTES))
    assert fast.recorder.chunks == shipped.recorder.chunks
    assert fast.ending == shipped.ending == ENDING
    assert fast.counts.data < fast.data_packets  # before the pause
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
    assert fast.counts.data < fast.data_packets // 2
    assert shipped.counts.data + shipped.counts.extended == shipped.data_packets
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
    assert run.counts.data < run.data_packets // 2
    assert run.ending == ENDING


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_other_streams_and_cuts_arrive_alike_with_and_without_the_fast_path(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # Other chunk mixes and read cuts (the seed drives both), at the agent's window.
    fast = await _stream(monkeypatch, True, seed=seed, window=AGENT_WINDOW, total=300_000)
    shipped = await _stream(monkeypatch, False, seed=seed, window=AGENT_WINDOW, total=300_000)
    assert coalesced(fast.recorder.chunks) == coalesced(script(seed, 300_000))
    assert coalesced(shipped.recorder.chunks) == coalesced(script(seed, 300_000))
    assert fast.ending == shipped.ending == ENDING
    assert fast.counts.data < fast.data_packets // 2
