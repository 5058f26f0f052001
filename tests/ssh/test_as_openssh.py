"""The whole-process bench's simulated nodes send their lines as OpenSSH's sshd does.

A real sshd runs a shell that writes agent-sized lines; an asyncssh server writes the
same lines, once as shipped and once framed by ``testkit.loopback.as_openssh``. The
client counts, between the first and the last line, the packets that carried no line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import asyncssh

from testkit.loopback.as_openssh import openssh_framing
from testkit.loopback.openssh import OpenSshServer

LINES = 12
LINE = b"7" * 1_700 + b"\n"  # about an agent sample
APART_S = 0.05  # the writes are separate, as the agent's once a second are


@dataclass
class PacketCount:
    """The connection's receive sequence number at each data packet, and the lines seen."""

    conn: Any
    seqs: list[int] = field(default_factory=list)
    lines: int = 0

    def data_received(self, data: bytes, _datatype: int | None) -> None:
        self.seqs.append(self.conn._recv_seq)
        self.lines += data.count(b"\n")

    def others_between_lines(self) -> int:
        """Packets between the first and the last data packet that carried no data.

        One packet's data can reach the session in two calls (asyncssh delivers what it
        buffered before the session started), so packets are told by sequence number.
        """
        return self.seqs[-1] - self.seqs[0] - (len(set(self.seqs)) - 1)


class _Session(asyncssh.SSHClientSession[bytes]):
    def __init__(self, count: PacketCount) -> None:
        self.count = count

    def data_received(self, data: bytes, datatype: int | None) -> None:
        self.count.data_received(data, datatype)


async def _count(conn: asyncssh.SSHClientConnection, command: str) -> PacketCount:
    count = PacketCount(conn)
    chan, _ = await conn.create_session(lambda: _Session(count), command, encoding=None)
    await chan.wait_closed()
    assert count.lines == LINES
    return count


async def _from_sshd() -> PacketCount:
    line = f"head -c {len(LINE) - 1} /dev/zero | tr '\\0' 7; echo"
    script = f"for i in $(seq {LINES}); do {line}; sleep {APART_S}; done"
    async with (
        OpenSshServer() as sshd,
        asyncssh.connect(
            "127.0.0.1",
            port=sshd.port,
            client_keys=[sshd.client_key_path],
            known_hosts=sshd.known_hosts,
        ) as conn,
    ):
        return await _count(conn, script)


class _Open(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False


async def _lines(process: asyncssh.SSHServerProcess[bytes]) -> None:
    for _ in range(LINES):
        process.stdout.write(LINE)
        await asyncio.sleep(APART_S)  # the stimulus: lines written apart, as an agent does
    process.exit(0)


async def _from_asyncssh() -> PacketCount:
    server = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
        server_factory=_Open,
        process_factory=_lines,
        encoding=None,
    )
    try:
        async with asyncssh.connect(
            "127.0.0.1", port=server.get_port(), username="node", known_hosts=None
        ) as conn:
            return await _count(conn, "agent")
    finally:
        server.close()


async def test_a_framed_asyncssh_server_sends_each_line_alone_as_sshd_does() -> None:
    sshd = await _from_sshd()
    shipped = await _from_asyncssh()
    with openssh_framing():
        framed = await _from_asyncssh()
    assert sshd.others_between_lines() == 0
    assert framed.others_between_lines() == 0
    # asyncssh as shipped: an ignore message before (nearly) every data packet
    assert shipped.others_between_lines() >= LINES // 2
