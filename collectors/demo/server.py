"""The asyncssh server side of a simulated node: authentication and a chrooted SFTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncssh

from collectors.demo.node import SimulatedNode


class NodeServer(asyncssh.SSHServer):
    """Accepts exactly one client key, any user name."""

    def __init__(
        self,
        node: SimulatedNode,
        client_key: asyncssh.SSHKey,
        reachable: Callable[[SimulatedNode], bool],
    ) -> None:
        self._node = node
        self._client_key = client_key
        self._reachable = reachable
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        """Track the connection; refuse it while the scenario says the node is down."""
        self._conn = conn
        self._node.connections.add(conn)
        if not self._reachable(self._node):
            asyncio.get_running_loop().call_soon(conn.abort)

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection."""
        if self._conn is not None:
            self._node.connections.discard(self._conn)

    def connection_requested(
        self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
    ) -> bool:
        """Act as a jump host, but only towards loopback (other loopback nodes)."""
        return dest_host in ("127.0.0.1", "localhost")

    def begin_auth(self, username: str) -> bool:
        """Authentication is always required."""
        return True

    def public_key_auth_supported(self) -> bool:
        """Only public keys are accepted."""
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        """Only the fleet's client key."""
        return key.public_data == self._client_key.public_data


class NodeSftp(asyncssh.SFTPServer):
    """SFTP jailed in the node's home directory; counts files opened for writing."""

    def __init__(self, chan: asyncssh.SSHServerChannel[bytes], node: SimulatedNode) -> None:
        super().__init__(chan, chroot=str(node.home).encode())
        self._node = node

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> object:
        """Open a file, counting uploads (opens for writing)."""
        if pflags & asyncssh.FXF_WRITE:
            self._node.uploads += 1
        return super().open(path, pflags, attrs)
