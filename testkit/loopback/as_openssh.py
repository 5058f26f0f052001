"""asyncssh servers that put one packet on the wire per write, as OpenSSH's sshd does.

asyncssh (2.24.1, ``SSHConnection.send_packet``) sends an empty ``SSH_MSG_IGNORE`` in
front of every packet it encrypts, whatever the cipher: the counter-measure RFC 4251
§9.3.1 gives for CBC modes. OpenSSH's sshd sends none, so an agent line reaches the
controller as one packet. A simulated fleet served by asyncssh as shipped makes the
controller decrypt and walk two packets per line where a real fleet sends one;
``tests/ssh/test_as_openssh.py`` counts both against a real sshd.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from asyncssh.connection import SSHConnection, SSHServerConnection
from asyncssh.constants import MSG_IGNORE
from asyncssh.packet import String

_SEND = SSHConnection.send_packet
_CHAFF = (String(b""),)  # the ignore message asyncssh writes before each packet


def _send_packet(self: Any, pkttype: int, *args: bytes, handler: Any = None) -> None:
    if pkttype == MSG_IGNORE and args == _CHAFF:
        return
    _SEND(self, pkttype, *args, handler=handler)


def frame_as_openssh() -> None:
    """From now on, every asyncssh server connection of this process sends no ignore chaff.

    Client connections are untouched: the controller under test sends as shipped.
    """
    SSHServerConnection.send_packet = _send_packet  # type: ignore[method-assign]


def framed_as_asyncssh() -> None:
    """Undo :func:`frame_as_openssh`: servers send asyncssh's chaff again."""
    if "send_packet" in SSHServerConnection.__dict__:
        del SSHServerConnection.send_packet  # inherits SSHConnection's again


@contextlib.contextmanager
def openssh_framing() -> Iterator[None]:
    """:func:`frame_as_openssh` for the ``with`` block only (tests share the process)."""
    frame_as_openssh()
    try:
        yield
    finally:
        framed_as_asyncssh()
