"""Running the metadata query on the Slurm login node over SSH (host key verified).

One connection per ask: the query runs once a minute at most, so a held connection
would save little and would be one more thing to supervise. The output is read in
chunks and the command is abandoned past the cap, so a login node cannot make the
controller hold more than ``[jobs] max_output_mib``.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncssh

from fleet.settings.jobs_section import JobsSection
from ledger.jobs.slurm_meta import MetadataError, Runner, remote_command

CHUNK = 1 << 16


def ssh_runner(
    section: JobsSection,
    known_hosts: str | None = None,
    client_keys: Sequence[str] | None = None,
) -> Runner:
    """A :data:`Runner` that runs argv on ``section.login_node``.

    Args:
        section: the [jobs] table (login node, user, port, output cap).
        known_hosts: a known_hosts file; None: asyncssh's default (``~/.ssh/known_hosts``),
            never unverified.
        client_keys: private key files; None: the agent's and ``~/.ssh``'s defaults.
    """
    if section.login_node is None:
        raise ValueError("[jobs] login_node is not set")
    host = section.login_node
    cap = section.max_output_mib << 20

    async def run(argv: Sequence[str]) -> bytes:
        options: dict[str, object] = {"port": section.login_port}
        if section.login_user:
            options["username"] = section.login_user
        if known_hosts is not None:
            options["known_hosts"] = known_hosts
        if client_keys is not None:
            options["client_keys"] = list(client_keys)
        try:
            async with asyncssh.connect(host, **options) as conn:
                return await _bounded_output(conn, remote_command(argv), cap)
        except (asyncssh.Error, OSError) as exc:
            raise MetadataError(f"{host}: {exc}", "ssh") from None

    return run


async def _bounded_output(conn: asyncssh.SSHClientConnection, command: str, cap: int) -> bytes:
    process = await conn.create_process(command, encoding=None, stdin=asyncssh.DEVNULL)
    chunks: list[bytes] = []
    size = 0
    while chunk := await process.stdout.read(CHUNK):
        size += len(chunk)
        if size > cap:
            process.kill()
            raise MetadataError(f"answer exceeds the cap of {cap} bytes", "size")
        chunks.append(chunk)
    done = await process.wait()
    if done.exit_status != 0:
        raise MetadataError(f"{command.split()[0]} exited {done.exit_status}", "exit")
    return b"".join(chunks)
