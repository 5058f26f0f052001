"""A real OpenSSH ``sshd`` on loopback, run as the current user with a throwaway config."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import asyncssh

from testkit.ports import holds_listener, start_on_a_free_port

SSHD = "/usr/sbin/sshd"
LISTEN_WITHIN_S = 10.0
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
        self._process, self.port = await start_on_a_free_port(
            self._start, self._listening, self._log_text, self._first_ports
        )
        return self

    async def _start(self, port: int) -> asyncio.subprocess.Process:
        self.port = port
        self._write_files()
        return await asyncio.create_subprocess_exec(
            SSHD, "-D", "-E", str(self._log), "-f", str(self.home / "sshd_config"),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip

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

    async def _listening(self, process: asyncio.subprocess.Process, port: int) -> bool:
        """Until this sshd holds the port's listener (True) or has exited (False).

        A connection that succeeds proves nothing: the neighbour that took the port
        answers it too (:func:`testkit.ports.holds_listener`).
        """
        deadline = asyncio.get_running_loop().time() + LISTEN_WITHIN_S
        while process.returncode is None:
            if holds_listener(process.pid, port):
                return True
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"sshd not listening within {LISTEN_WITHIN_S} s: "
                                   f"{self._log_text()}")  # fmt: skip
            await asyncio.sleep(0.05)  # polling: sshd posts no readiness signal
        return False

    def _log_text(self) -> str:
        try:
            return self._log.read_text(errors="replace").strip()
        except OSError:
            return "(no log)"
