"""Putting a content-addressed file (the agent or a probe zipapp) on a node, once."""

from __future__ import annotations

import posixpath
import secrets

import asyncssh

from collectors.ssh.target import sftp_dir


async def ensure_uploaded(
    conn: asyncssh.SSHClientConnection, name: str, content: bytes, remote_dir: str
) -> str:
    """Make sure ``<remote_dir>/<name>`` holds ``content``; upload only when it is missing.

    ``name`` carries the content hash (``agent-<sha12>.pyz``), so a file with that
    name is the right one: it is written to a temporary name and renamed into
    place, so a half-written upload never carries the final name.

    Args:
        conn: an open connection to the node.
        name: the file name, without directories.
        content: the bytes the file must hold.
        remote_dir: where to keep it; ``~/`` means the login's home directory.

    Returns:
        The remote path, relative to the home directory when ``remote_dir`` starts
        with ``~/``, as an exec'd command (which starts in the home directory) sees it.
    """
    path = remote_file(remote_dir, name)
    directory = posixpath.dirname(path) or "."
    async with conn.start_sftp_client() as sftp:
        if await _has_size(sftp, path, len(content)):
            return path
        await sftp.makedirs(directory, exist_ok=True)
        temp = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.part")
        async with sftp.open(temp, "wb") as remote:
            await remote.write(content)
        try:
            await sftp.posix_rename(temp, path)
        except asyncssh.SFTPError:
            await _rename_fallback(sftp, temp, path)
    return path


def remote_file(remote_dir: str, name: str) -> str:
    """Where :func:`ensure_uploaded` puts ``name``, as an exec'd command sees the path."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    return posixpath.join(sftp_dir(remote_dir), name)


def agent_missing(ended: BaseException) -> bool:
    """Whether the agent's run ended because its file is not on the node.

    The transport runs the agent before checking for it (one SFTP session less per
    connection in the usual case, where it is already there); Python says this on
    stderr and exits with status 2 when the file is absent.
    """
    return "can't open file" in str(ended) and "status 2" in str(ended)


async def _has_size(sftp: asyncssh.SFTPClient, path: str, size: int) -> bool:
    try:
        attrs = await sftp.stat(path)
    except asyncssh.SFTPNoSuchFile:
        return False
    return attrs.size == size


async def _rename_fallback(sftp: asyncssh.SFTPClient, temp: str, path: str) -> None:
    # Servers without posix-rename refuse to replace a file: another controller may
    # have uploaded the same content meanwhile, which is just as good.
    try:
        await sftp.rename(temp, path)
    except asyncssh.SFTPError:
        await sftp.remove(temp)
        if not await sftp.exists(path):
            raise
