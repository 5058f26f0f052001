"""A local ``nats-server`` for the demo and the tests: loopback, ephemeral port, JetStream.

Production runs its own NATS (a 3-node cluster for the JetStream log, see
docs/scale-out.md); this starts the Debian ``nats-server`` binary for one machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

_LISTENING = re.compile(rb"Listening for client connections on ([\d.]+):(\d+)")
_CANDIDATES = ("nats-server", "/usr/sbin/nats-server", "/usr/bin/nats-server")
STARTUP_S = 20.0


class NatsServerError(RuntimeError):
    """nats-server is not installed or did not come up (the message says which)."""


def find_nats_server() -> str:
    """Path of the nats-server binary.

    Raises:
        NatsServerError: none is installed.
    """
    for candidate in _CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    raise NatsServerError("nats-server is not installed (Debian: apt install nats-server)")


@dataclass
class LocalNats:
    """A nats-server this process started, and its client URL."""

    url: str
    port: int
    process: asyncio.subprocess.Process
    log_path: Path

    async def stop(self) -> None:
        """Terminate the server and wait for it (it flushes JetStream on SIGTERM)."""
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def start_nats_server(
    store_dir: Path, port: int = -1, *, config: str | None = None, scheme: str = "nats"
) -> LocalNats:
    """Start nats-server on 127.0.0.1 with JetStream stored in ``store_dir``.

    Args:
        store_dir: JetStream's directory (created); the server log goes into it.
        port: client port; -1 lets the server pick a free one (read back from its log).
        config: nats-server configuration text (``authorization``, ``tls`` blocks),
            written to ``store_dir/nats-server.conf`` with owner-only permissions.
        scheme: the URL's scheme: "tls" when ``config`` has a ``tls`` block.

    Raises:
        NatsServerError: not installed, or not listening within 20 s.
    """
    binary = find_nats_server()
    log_path = _prepare(store_dir)
    args = ["-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store_dir), "-l", str(log_path)]
    if config is not None:
        conf = store_dir / "nats-server.conf"
        conf.touch(mode=0o600)
        conf.write_text(config, encoding="utf-8")
        args = ["-c", str(conf), *args]  # the command line's flags win over the file's
    process = await asyncio.create_subprocess_exec(
        binary, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_S
    while (bound := _listening_port(log_path)) is None:
        if process.returncode is not None or loop.time() > deadline:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise NatsServerError(f"nats-server did not start; its log: {log_path}")
        await asyncio.sleep(0.05)  # polling the log for the port line, bounded above
    return LocalNats(f"{scheme}://127.0.0.1:{bound}", bound, process, log_path)


def _prepare(store_dir: Path) -> Path:
    store_dir.mkdir(parents=True, exist_ok=True)
    log_path = store_dir / "nats-server.log"
    log_path.unlink(missing_ok=True)  # a previous run's port line must not be read
    return log_path


def _listening_port(log_path: Path) -> int | None:
    try:
        match = _LISTENING.search(log_path.read_bytes())
    except FileNotFoundError:
        return None
    return int(match.group(2)) if match else None
