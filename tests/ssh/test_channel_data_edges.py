"""Channel data on the fast path (ssh/channel_data): errors, stderr, a real sshd, the check.

Real asyncssh servers on loopback (testkit.loopback.byte_stream), a TCP relay that
flips a byte, and a real OpenSSH sshd; each case compares with asyncssh as shipped
(``channel_data.uninstall()``) where the outcome is the point.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import shlex
import sys
from pathlib import Path

import asyncssh
import pytest
from asyncssh.connection import SSHClientConnection, SSHConnection, SSHServerConnection

import collectors.ssh  # noqa: F401  (importing the transport installs the fast path)
from collectors.ssh import channel_data
from collectors.ssh import channel_data_check as check
from collectors.ssh.stream import AGENT_WINDOW, AgentChannel
from testkit.loopback import byte_stream
from testkit.loopback.byte_stream import (
    ENDING,
    HandlerCounts,
    Run,
    StreamRecorder,
    fast_path,
    script,
)
from testkit.loopback.openssh import OpenSshServer
from testkit.loopback.relay import LoopbackRelay

GCM = "aes128-gcm@openssh.com"
SEED = 11
WITHIN = 60.0


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
    relay = LoopbackRelay(server.get_port())
    port = await relay.start()
    lost: list[BaseException | None] = []

    class Client(asyncssh.SSHClient):
        def connection_lost(self, exc: Exception | None) -> None:
            lost.append(exc)

    async with fast_path(fast):
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
    assert SSHClientConnection._recv_data.__module__ == channel_data.__name__
    assert SSHServerConnection._recv_data is SSHConnection._recv_data  # servers: as shipped
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
            assert SSHClientConnection._recv_data is SSHConnection._recv_data
            assert name in caplog.text
        with monkeypatch.context() as changed:  # a _recv_data of the client class's own
            changed.setattr(SSHClientConnection, "_recv_data", SSHConnection.close, raising=False)
            with pytest.raises(RuntimeError, match=r"SSHClientConnection\._recv_data"):
                check.check_fast_path()
    finally:
        channel_data.install()
    assert channel_data.installed()


_ROOT = str(Path(__file__).resolve().parents[2])  # the tree under test, for the node side
# The node side of the sshd case: the stream of ``script(seed, total)``, one write each.
_SSHD_WRITER = """\
import sys
sys.path.insert(0, {root!r})
from testkit.loopback.byte_stream import script
for datatype, data in script({seed}, {total}):
    out = sys.stdout if datatype is None else sys.stderr
    out.buffer.write(data)
    out.buffer.flush()
"""


async def _sshd_stream(monkeypatch: pytest.MonkeyPatch, fast: bool, total: int) -> Run:
    writer = _SSHD_WRITER.format(root=_ROOT, seed=SEED, total=total)
    async with OpenSshServer() as sshd, fast_path(fast):
        with monkeypatch.context() as patched:
            counts = HandlerCounts(patched)
            conn = await asyncssh.connect(
                "127.0.0.1",
                sshd.port,
                known_hosts=sshd.known_hosts,
                client_keys=[sshd.client_key_path],
                username=getpass.getuser(),
                encryption_algs=[GCM],
            )
            recorder = StreamRecorder()
            command = f"{shlex.quote(sys.executable)} -c {shlex.quote(writer)}"
            await conn.create_session(lambda: recorder, command, encoding=None, window=AGENT_WINDOW)
            await asyncio.wait_for(recorder.closed.wait(), WITHIN)
            conn.close()
            await conn.wait_closed()
    return Run(recorder, counts, None, 0, 0)


async def test_a_real_sshd_stream_arrives_intact_with_and_without_thefast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # OpenSSH sends no ignore messages and packs what it read from the pipe: the nodes' side.
    total = 1_000_000
    fast = await _sshd_stream(monkeypatch, True, total)
    shipped = await _sshd_stream(monkeypatch, False, total)
    expected = script(SEED, total)
    # sshd reads stdout and stderr from separate pipes: each stream's bytes in order.
    for run in (fast, shipped):
        for datatype in (None, byte_stream.STDERR):
            sent = b"".join(data for kind, data in expected if kind == datatype)
            got = b"".join(data for kind, data in run.recorder.chunks if kind == datatype)
            assert got == sent
        assert run.ending == ENDING
        assert len(run.counts.adjusts) >= total // AGENT_WINDOW
    assert fast.counts.data < fast.data_packets // 2
    assert shipped.counts.data + shipped.counts.extended == shipped.data_packets
