"""A real OpenSSH ``sshd`` on loopback, run as the current user with a throwaway config."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path

import asyncssh

SSHD = "/usr/sbin/sshd"
# sshd insists on this directory when started as root (privilege separation).
_PRIVSEP_DIR = Path("/run/sshd")

_CONFIG = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {home}/host_ed25519
PidFile {home}/sshd.pid
AuthorizedKeysFile {home}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
MaxStartups 100:30:200
Subsystem sftp internal-sftp
LogLevel ERROR
"""


BIND_TRIES = 5
_PORT_TAKEN = "address already in use"  # sshd's log when another process has the port


class SshdExited(RuntimeError):
    """sshd ended before it listened; the message ends with its log."""


class OpenSshServer:
    """``async with OpenSshServer() as sshd``: a private sshd on ``127.0.0.1:sshd.port``.

    It trusts ``client_key_path`` (generated) and presents a generated host key,
    listed in the ``known_hosts`` file, so clients verify it as any host.
    """

    def __init__(self, ports: Iterable[int] = ()) -> None:
        """``ports``: the ports to try first (tests of the retry); then free ones."""
        self._first_ports = list(ports)
        self.home = Path(tempfile.mkdtemp(prefix="gpufleet-sshd-"))
        self.port = 0
        self.client_key_path = str(self.home / "client_key")
        self.known_hosts = str(self.home / "known_hosts")
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self._process: asyncio.subprocess.Process | None = None
        self._log = self.home / "sshd.log"

    async def __aenter__(self) -> OpenSshServer:
        # The free port is only free when chosen: a test beside this one may bind it
        # before sshd does, and sshd then exits. Another port is tried then.
        tried: list[int] = []
        for attempt in range(BIND_TRIES):
            first = self._first_ports
            self.port = first[attempt] if attempt < len(first) else _free_port()
            tried.append(self.port)
            self._write_files()
            self._process = await asyncio.create_subprocess_exec(
                SSHD, "-D", "-E", str(self._log), "-f", str(self.home / "sshd_config"),
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await self._wait_listening(10.0)
            except SshdExited as exc:
                if _PORT_TAKEN not in str(exc).lower():
                    raise
                continue
            return self
        raise RuntimeError(f"sshd: every port tried was taken ({tried})")

    async def __aexit__(self, *exc_info: object) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._process.wait(), 5)
            if self._process.returncode is None:
                self._process.kill()
                await self._process.wait()
        shutil.rmtree(self.home, ignore_errors=True)

    def _write_files(self) -> None:
        if os.geteuid() == 0:
            _PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        host_key_path = self.home / "host_ed25519"
        self.host_key.write_private_key(str(host_key_path))
        host_key_path.chmod(0o600)
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key.write_private_key(self.client_key_path)
        Path(self.client_key_path).chmod(0o600)
        client_key.write_public_key(str(self.home / "authorized_keys"))
        public = self.host_key.export_public_key("openssh").decode().split()
        Path(self.known_hosts).write_text(f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n")
        (self.home / "sshd_config").write_text(_CONFIG.format(port=self.port, home=self.home))

    async def _wait_listening(self, within: float) -> None:
        """Until this sshd holds the listening socket of ``self.port``.

        A connection that succeeds proves nothing: the neighbour that took the port
        answers it too. The kernel's socket table (``/proc/net/tcp``) and sshd's own
        descriptors say whose listener it is.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        assert self._process is not None
        while True:
            if self._process.returncode is not None:
                raise SshdExited(f"sshd exited: {self._log_text()}")
            if _holds_listener(self._process.pid, self.port):
                return
            if loop.time() > deadline:
                raise TimeoutError(f"sshd not listening within {within} s: {self._log_text()}")
            await asyncio.sleep(0.05)  # polling: sshd posts no readiness signal

    def _log_text(self) -> str:
        try:
            return self._log.read_text(errors="replace").strip()
        except OSError:
            return "(no log)"


_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def _holds_listener(pid: int, port: int) -> bool:
    """Does process ``pid`` hold a socket listening on 127.0.0.1:``port``?"""
    local = f"0100007F:{port:04X}"  # 127.0.0.1 as a little-endian kernel prints it
    inodes = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[3] == _LISTEN:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) in inodes for fd in fds.iterdir())
    except OSError:  # the process ended, or a descriptor closed while read
        return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
