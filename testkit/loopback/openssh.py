"""A real OpenSSH ``sshd`` on loopback, run as the current user with a throwaway config."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import tempfile
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


class OpenSshServer:
    """``async with OpenSshServer() as sshd``: a private sshd on ``127.0.0.1:sshd.port``.

    It trusts ``client_key_path`` (generated) and presents a generated host key,
    listed in the ``known_hosts`` file, so clients verify it as any host.
    """

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="gpufleet-sshd-"))
        self.port = 0
        self.client_key_path = str(self.home / "client_key")
        self.known_hosts = str(self.home / "known_hosts")
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self._process: asyncio.subprocess.Process | None = None
        self._log = self.home / "sshd.log"

    async def __aenter__(self) -> OpenSshServer:
        self.port = _free_port()
        self._write_files()
        self._process = await asyncio.create_subprocess_exec(
            SSHD, "-D", "-E", str(self._log), "-f", str(self.home / "sshd_config"),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await self._wait_listening(10.0)
        return self

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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        assert self._process is not None
        while True:
            if self._process.returncode is not None:
                raise RuntimeError(f"sshd exited: {self._log_text()}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if loop.time() > deadline:
                    raise TimeoutError(f"sshd not listening within {within} s") from None
                await asyncio.sleep(0.05)  # polling the port: sshd posts no readiness signal
                continue
            writer.close()
            return

    def _log_text(self) -> str:
        try:
            return self._log.read_text(errors="replace").strip()
        except OSError:
            return "(no log)"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
