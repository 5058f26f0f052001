"""asyncssh's receive path per channel data packet, as shipped and with the fast path, one run.

A real connection on loopback receives LINES agent-sized lines (1.7 KB, one write
each) from either peer: a real OpenSSH ``sshd`` (one ``MSG_CHANNEL_DATA`` per line,
as from a node) or an asyncssh server (which sends an ``MSG_IGNORE`` before every
packet it encrypts). The bytes of that stream are recorded as they arrive, cut into
one read per line, and replayed into the same connection's ``data_received`` with the
receive state (cipher IV, sequence number, window) put back before each replay:
asyncssh as shipped (``channel_data.uninstall()``) and with the fast path, rounds
interleaved, CPU time per line, best of the rounds. The session only counts; the
agent channel's window (32 KiB) makes asyncssh send a window adjust every ~10 lines,
on both sides. ``decrypt`` is the floor: the AEAD calls alone for the same packets
(an ``AESGCM`` per key, as the fast path keeps); what is left above it is Python.

    PYTHONPATH=. .venv/bin/python bench/bench_channel_data.py --lines 2000 --rounds 9
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
import time
from collections.abc import Callable
from typing import Any

import asyncssh

from collectors.ssh import asyncssh_costs, channel_data
from collectors.ssh.stream import AGENT_WINDOW
from testkit.loopback.openssh import OpenSshServer

LINE_BYTES = 1700
_TAG = 16
_SMALL_PACKET = 100  # bytes: an ignore message or a window adjust, not a line
# The node side for sshd: wait for the go line, then one flushed line per write, paced so
# sshd reads (and sends) each line as its own packet; then wait, so no close is recorded.
_WRITER = (
    "import sys, time\n"
    "sys.stdin.readline()\n"
    "line = b'x' * {size} + b'\\n'\n"
    "for _ in range({lines}):\n"
    "    sys.stdout.buffer.write(line); sys.stdout.buffer.flush(); time.sleep(0.0005)\n"
    "sys.stdin.readline()\n"
)


@channel_data.accept_fast_data
class _Counter(asyncssh.SSHClientSession[bytes]):
    def __init__(self, expected: int) -> None:
        self.received = 0
        self._expected = expected
        self.all_in = asyncio.Event()

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        self.received += len(data)
        if self.received >= self._expected:
            self.all_in.set()


class _Asyncssh(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False


async def _asyncssh_lines(process: asyncssh.SSHServerProcess[bytes]) -> None:
    lines = int((process.command or "0").split()[-1])
    await process.stdin.readline()
    line = b"x" * (LINE_BYTES - 1) + b"\n"
    for _ in range(lines):
        process.stdout.write(line)
        await process.stdout.drain()
    await process.stdin.readline()  # open until the client is done: no close in the stream
    process.exit(0)


class _Recording:
    """The connection's reads from the go line on, and its receive state at that point."""

    def __init__(self, conn: Any, chan: Any) -> None:
        self.conn, self.chan = conn, chan
        self.encryption = conn._recv_encryption
        self.iv = getattr(self.encryption._cipher, "_iv", None)
        self.seq, self.window = conn._recv_seq, chan._recv_window
        self.stream = bytearray()
        self._deliver = conn.data_received
        conn.data_received = self._record

    def _record(self, data: bytes, datatype: asyncssh.DataType = None) -> None:
        self.stream += data
        self._deliver(data)

    def restore(self) -> None:
        conn = self.conn
        conn.data_received = self._deliver
        assert conn._recv_encryption is self.encryption and not conn._inpbuf
        if self.iv is not None:
            self.encryption._cipher._iv = self.iv
        conn._recv_seq, self.chan._recv_window = self.seq, self.window

    def packets(self) -> list[bytes]:
        """The recorded stream cut at packet boundaries."""
        cipher, gcm = self.encryption._cipher, self.iv is not None
        out, off, seq = [], 0, self.seq
        while off < len(self.stream):
            head = bytes(self.stream[off : off + 4])
            if not gcm:
                head = cipher.decrypt_header(head, seq.to_bytes(8, "big"))
            end = off + 4 + int.from_bytes(head, "big") + _TAG
            out.append(bytes(self.stream[off:end]))
            off, seq = end, seq + 1
        return out


def _reads(packets: list[bytes]) -> list[bytes]:
    """One read per data packet, with the ignore message an asyncssh peer sends before it."""
    reads, pending = [], b""
    for packet in packets:
        pending += packet
        if len(packet) > _SMALL_PACKET:
            reads.append(pending)
            pending = b""
    return reads


def _decrypt_floor(recording: _Recording, packets: list[bytes]) -> Callable[[], None]:
    cipher, seq0 = recording.encryption._cipher, recording.seq
    if recording.iv is not None:
        aead = asyncssh.crypto.cipher.AESGCM(cipher._key)
        iv = recording.iv
        fixed, count = iv[:4], int.from_bytes(iv[4:], "big")

        def floor() -> None:
            for i, packet in enumerate(packets):
                nonce = fixed + (count + i).to_bytes(8, "big")
                aead.decrypt(nonce, packet[4:], packet[:4])

        return floor

    def chacha_floor() -> None:
        for i, packet in enumerate(packets):
            nonce = (seq0 + i).to_bytes(8, "big")
            cipher.decrypt_header(packet[:4], nonce)
            cipher.verify_and_decrypt(packet[:4], packet[4:-_TAG], nonce, packet[-_TAG:])

    return chacha_floor


async def _record(
    peer: str, cipher: str, lines: int, window: int = AGENT_WINDOW
) -> tuple[_Recording, _Counter, Any]:
    """Connect to ``peer``, stream ``lines`` lines, and keep what arrived."""
    options: dict[str, Any] = {"encryption_algs": [cipher], "username": "u"}
    if peer == "sshd":
        sshd = await OpenSshServer().__aenter__()
        options |= {
            "known_hosts": sshd.known_hosts,
            "client_keys": [sshd.client_key_path],
            "username": os.environ.get("USER", "root"),
        }
        writer = _WRITER.format(size=LINE_BYTES - 1, lines=lines)
        port, command = sshd.port, f"python3 -c {shlex.quote(writer)}"
        closer: Any = sshd
    else:
        server = await asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
            server_factory=_Asyncssh, process_factory=_asyncssh_lines, encoding=None,
        )  # fmt: skip
        options["known_hosts"] = None
        port, command, closer = server.get_port(), f"lines {lines}", server
    conn = await asyncssh.connect("127.0.0.1", port, **options)
    counter = _Counter(lines * LINE_BYTES)
    chan, _ = await conn.create_session(lambda: counter, command, encoding=None, window=window)
    recording = _Recording(conn, chan)
    chan.write(b"go\n")
    await asyncio.wait_for(counter.all_in.wait(), 120)
    recording.restore()
    return recording, counter, (conn, closer)


def _per_line_us(call: Callable[[], None], lines: float) -> float:
    start = time.process_time()
    call()
    return (time.process_time() - start) / lines * 1e6


async def measure(peer: str, cipher: str, lines: int, rounds: int, window: int) -> dict[str, float]:
    recording, counter, (conn, closer) = await _record(peer, cipher, lines, window)
    packets = recording.packets()
    reads = _reads(packets)
    lines_in = counter.received / LINE_BYTES  # sshd may put two lines in one packet

    def replay() -> None:
        recording.restore()
        for read in reads:
            conn.data_received(read)

    best = {"shipped": float("inf"), "fast": float("inf"), "decrypt": float("inf")}
    recorded = counter.received
    for _ in range(rounds):
        for side in ("shipped", "fast"):
            channel_data.install() if side == "fast" else channel_data.uninstall()
            before = counter.received
            best[side] = min(best[side], _per_line_us(replay, lines_in))
            assert counter.received - before == recorded, (side, counter.received - before)
        floor = _decrypt_floor(recording, packets)
        best["decrypt"] = min(best["decrypt"], _per_line_us(floor, lines_in))
        await asyncio.sleep(0)  # let the window adjusts go out
    channel_data.install()
    recording.restore()
    conn.close()
    if isinstance(closer, OpenSshServer):
        await closer.__aexit__(None, None, None)
    else:
        closer.close()
    best["packets_per_line"] = len(packets) / lines_in
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--peers", default="sshd,asyncssh")
    parser.add_argument(
        "--window", type=int, default=AGENT_WINDOW, help="channel receive window (bytes)"
    )
    parser.add_argument("--ciphers", default="aes128-gcm@openssh.com,chacha20-poly1305@openssh.com")
    args = parser.parse_args()
    asyncssh_costs.install()  # both sides: only the receive path differs
    print(f"# asyncssh {asyncssh.__version__}, python {sys.version.split()[0]}; "
          f"load {os.getloadavg()[0]:.2f}; CPU µs per {LINE_BYTES} B line, "
          f"best of {args.rounds} x {args.lines}; window {args.window} B")  # fmt: skip
    print(f"{'peer':<9} {'cipher':<30} {'pkts':>4} {'shipped':>8} {'fast':>7} {'ratio':>6} "
          f"{'decrypt':>8} {'Python shipped':>15} {'Python fast':>12} {'ratio':>6}")  # fmt: skip
    for peer in args.peers.split(","):
        for cipher in args.ciphers.split(","):
            r = asyncio.run(measure(peer, cipher, args.lines, args.rounds, args.window))
            py_shipped, py_fast = r["shipped"] - r["decrypt"], r["fast"] - r["decrypt"]
            print(f"{peer:<9} {cipher:<30} {r['packets_per_line']:>4.2f} {r['shipped']:>8.2f} "
                  f"{r['fast']:>7.2f} {r['fast'] / r['shipped']:>5.2f}x {r['decrypt']:>8.2f} "
                  f"{py_shipped:>15.2f} {py_fast:>12.2f} {py_fast / py_shipped:>5.2f}x",
                  flush=True)  # fmt: skip
    print(f"# load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
