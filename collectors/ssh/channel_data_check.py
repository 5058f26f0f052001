"""What the channel-data fast path (ssh/channel_data) relies on in asyncssh, and its check.

The fast path repeats what asyncssh 2.24.1 does for a channel data packet. Rather than
trust the version number, :func:`check_fast_path` compares the source of every asyncssh
function it repeats or bypasses with its digest at 2.24.1, and the attribute lists name
what it reads on live objects (a test checks them on a real connection).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import Any

import asyncssh.crypto.cipher as asyncssh_cipher
from asyncssh.channel import SSHClientChannel
from asyncssh.connection import SSHClientConnection, SSHConnection
from asyncssh.constants import MSG_CHANNEL_DATA, MSG_CHANNEL_EXTENDED_DATA
from asyncssh.crypto.chacha import ChachaCipher
from asyncssh.crypto.cipher import GCMCipher
from asyncssh.encryption import ChachaEncryption, GCMEncryption
from asyncssh.packet import SSHPacketHandler

_FAST_PATH_MODULE = "collectors.ssh.channel_data"

MIRRORED: dict[str, tuple[Callable[..., Any], str]] = {
    "SSHConnection.data_received": (SSHConnection.data_received, "b2d14a83b2604db6"),
    "SSHConnection._recv_data": (SSHConnection._recv_data, "fc4e0735191bb0fd"),
    "SSHConnection._recv_pkthdr": (SSHConnection._recv_pkthdr, "7adc4d88fe20593c"),
    "SSHConnection._recv_packet": (SSHConnection._recv_packet, "b3daa22e9763eee9"),
    "SSHConnection._finish_recv_packet": (SSHConnection._finish_recv_packet, "e12d96db58b3524e"),
    "SSHConnection._send": (SSHConnection._send, "c6698a37eb80f574"),
    "SSHConnection._process_ignore": (SSHConnection._process_ignore, "335fb6abf7571c8f"),
    "SSHPacketHandler.process_packet": (SSHPacketHandler.process_packet, "490a59d971d0ce03"),
    "SSHClientChannel._process_data": (SSHClientChannel._process_data, "342490795c4b893c"),
    "SSHClientChannel._process_extended_data": (
        SSHClientChannel._process_extended_data,
        "e4e69e0e1f37e977",
    ),
    "SSHClientChannel._accept_data": (SSHClientChannel._accept_data, "33121e9e185c9850"),
    "SSHClientChannel._deliver_data": (SSHClientChannel._deliver_data, "bd94ccbaa59ab510"),
    "GCMEncryption.decrypt_header": (GCMEncryption.decrypt_header, "50d9112c6d6c1ced"),
    "GCMEncryption.decrypt_packet": (GCMEncryption.decrypt_packet, "6feb840baa1102a4"),
    "GCMCipher.verify_and_decrypt": (GCMCipher.verify_and_decrypt, "c09eb5b36d0f6a92"),
    "GCMCipher._update_iv": (GCMCipher._update_iv, "bce250a8d9dc82b6"),
    "ChachaEncryption.decrypt_header": (ChachaEncryption.decrypt_header, "a379b497e3d8617b"),
    "ChachaEncryption.decrypt_packet": (ChachaEncryption.decrypt_packet, "6b65743ce728dfd4"),
    "ChachaCipher.decrypt_header": (ChachaCipher.decrypt_header, "44feda66527a87d0"),
    "ChachaCipher.verify_and_decrypt": (ChachaCipher.verify_and_decrypt, "0ab7b7420976f2f6"),
}
"""asyncssh functions whose behaviour the fast path repeats, with their source digests."""

CONNECTION_ATTRIBUTES = (
    "_inpbuf",
    "_recv_handler",
    "_recv_pkthdr",
    "_transport",
    "_auth_complete",
    "_auth_final",
    "_kex",
    "_kex_complete",
    "_decompressor",
    "_recv_encryption",
    "_recv_blocksize",
    "_recv_seq",
    "_max_recv_pktlen",
    "_channels",
    "_server_version",
    "_reset_keepalive_timer",
    "_send_disconnect",
    "_force_close",
    "internal_error",
)
"""Attributes of an asyncssh connection the fast path reads or calls."""

CHANNEL_ATTRIBUTES = (
    "_session",
    "_recv_state",
    "_send_state",
    "_recv_paused",
    "_encoding",
    "_recv_window",
    "_init_recv_window",
    "_read_datatypes",
    "_deliver_data",
)
"""Attributes of an asyncssh channel the fast path reads or calls."""

CIPHER_ATTRIBUTES = {
    GCMEncryption: ("_cipher",),
    GCMCipher: ("_key", "_iv"),
    ChachaEncryption: ("_cipher",),
}
"""Instance attributes of asyncssh's AEAD objects the fast path reads."""


def check_fast_path() -> None:
    """Fail loudly when asyncssh is not the one the fast path repeats.

    Raises:
        RuntimeError: a mirrored function's source changed, or an attribute is missing.
    """
    changed = [name for name, (function, digest) in MIRRORED.items() if _digest(function) != digest]
    handlers = SSHClientChannel._packet_handlers
    if handlers.get(MSG_CHANNEL_DATA) is not SSHClientChannel._process_data:
        changed.append("SSHClientChannel._packet_handlers[MSG_CHANNEL_DATA]")
    if handlers.get(MSG_CHANNEL_EXTENDED_DATA) is not SSHClientChannel._process_extended_data:
        changed.append("SSHClientChannel._packet_handlers[MSG_CHANNEL_EXTENDED_DATA]")
    own = SSHClientConnection.__dict__.get("_recv_data")  # install puts the fast path there
    if own is not None and own.__module__ != _FAST_PATH_MODULE:
        changed.append("SSHClientConnection._recv_data (now its own)")
    if not hasattr(asyncssh_cipher, "AESGCM") or not hasattr(asyncssh_cipher, "InvalidTag"):
        changed.append("asyncssh.crypto.cipher.AESGCM/InvalidTag")
    if changed:
        raise RuntimeError(
            f"asyncssh changed: {', '.join(changed)} differ from 2.24.1; "
            "re-read collectors/ssh/channel_data.py against it"
        )


def _digest(function: Callable[..., Any]) -> str:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # no source shipped: cannot tell, so treat as changed
        return ""
    return hashlib.sha256(source.encode()).hexdigest()[:16]
