"""Channel data on an established connection, received in one loop per read.

Read against asyncssh 2.24.1 (``connection.py``, ``channel.py``, ``encryption.py``,
``crypto/cipher.py``, ``crypto/chacha.py``). Nearly every packet the controller
receives is an ``SSH_MSG_CHANNEL_DATA`` carrying one agent line, and for each asyncssh
runs its general path: ``_recv_pkthdr`` and ``_recv_packet`` (buffer slices, the
decryption, a new ``AESGCM`` object, ``SSHPacket``, the packet-type branches, the
channel dict, ``process_packet``'s table), then the channel's ``_process_data``,
``_accept_data`` and ``_deliver_data`` before the session sees the bytes.

:func:`install` replaces ``SSHClientConnection._recv_data`` (asyncssh's
``SSHConnection._recv_data``, inherited) by :func:`_receive`, which takes
the complete packets at the head of the buffer itself while all of these hold, and
hands everything else to asyncssh's own handlers, one step at a time, as before:

* the connection waits for a packet header, authentication is complete, no key
  exchange is in progress, there is no decompressor, asyncssh's debug level is below
  2 (so no per-packet log line is due) and the transport is open;
* the cipher is AES-GCM (plain length; ``AESGCM`` of the key, kept per key, and the
  IV advanced as ``GCMCipher._update_iv`` does) or chacha20-poly1305 (the cipher's
  own header decryption and verify-then-decrypt, stateless given the sequence number);
* the packet verifies and is ``MSG_IGNORE`` (an asyncssh peer sends one before every
  packet it encrypts) or ``MSG_CHANNEL_DATA`` or ``MSG_CHANNEL_EXTENDED_DATA`` with
  a known data type, its fields fill the payload exactly, and its channel is an
  ``SSHClientChannel`` of a session class registered with :func:`accept_fast_data`,
  open for receiving and not closing, not paused, without an encoding, the data
  non-empty and within the receive window.

For such a packet it does what asyncssh does, in its order: advance the cipher state
and the buffer, take the window, send the window adjust through the channel's own
``_deliver_data`` when one is due (its packets, an ignore message and the adjust, in
one write instead of two) else hand the bytes straight to the session, mark the
connection past authentication, then the sequence number. A packet that fails a
check is left untouched (decryption is repeatable: nothing is advanced before every
check passed) for asyncssh, which then decrypts it again and handles it, including
the errors it raises (MAC, window, decode). Rekeying goes through asyncssh; the next
read after ``NEWKEYS`` finds the new cipher.

:func:`~collectors.ssh.channel_data_check.check_fast_path` compares the source of
every asyncssh function mirrored here with its digest at 2.24.1; an asyncssh that
changed any of them runs as shipped (with a warning), and a test fails on it.
"""

from __future__ import annotations

import contextlib
import logging
import struct
from collections.abc import Callable
from typing import Any

import asyncssh.crypto.cipher as asyncssh_cipher
from asyncssh.channel import SSHClientChannel
from asyncssh.connection import SSHClientConnection, SSHConnection
from asyncssh.constants import MSG_CHANNEL_DATA, MSG_CHANNEL_EXTENDED_DATA, MSG_IGNORE
from asyncssh.encryption import ChachaEncryption, GCMEncryption
from asyncssh.logging import SSHLogger
from asyncssh.misc import DisconnectError

from collectors.ssh.channel_data_check import check_fast_path

log = logging.getLogger(__name__)

_TAG = 16  # AES-GCM and poly1305 tags, asyncssh's _recv_macsize for both
_SMALLEST = 16  # shorter packets (none valid) are left to asyncssh
_LENGTH = struct.Struct(">I")
_DATA = struct.Struct(">BBII")  # padding length, type, channel, data length
_EXTENDED = struct.Struct(">II")  # data type, data length (after the channel number)
_IGNORE_AT = 6  # padding length, type, string length: an ignore message's data
_DATA_AT = {MSG_CHANNEL_DATA: 10, MSG_CHANNEL_EXTENDED_DATA: 14}
_DROPPING = ("close_pending", "closed")  # asyncssh's _accept_data drops data then
_LOGS_PER_PACKET = 2  # asyncssh's debug2 logs every data packet from this level
_INVOCATION = 0xFFFFFFFFFFFFFFFF
_AEAD = "_gpufleet_aead"  # the AESGCM object of a GCMCipher's key, made once
_AEAD_ENCRYPTIONS = frozenset((GCMEncryption, ChachaEncryption))  # plain or stateless header

_fast_sessions: set[type] = set()
_originals: dict[str, Callable[..., Any]] = {}


def accept_fast_data(session_class: type) -> type:
    """Let channel data for sessions of ``session_class`` take the fast path (a decorator).

    The class must take ``data_received(data, datatype)`` as asyncssh's ``SSHSession``
    does; only bytes channels (no encoding) qualify.
    """
    _fast_sessions.add(session_class)
    return session_class


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_originals)


def install() -> None:
    """Receive channel data through :func:`_receive` on every asyncssh connection (once)."""
    if _originals:
        return
    try:
        check_fast_path()
    except RuntimeError as exc:
        # asyncssh as shipped still works, only dearer: a user's upgrade must not stop
        # the monitor. tests/ssh/test_channel_data.py fails on it instead.
        log.warning("%s; channel data takes asyncssh's own path", exc)
        return
    # Client connections only: a server's channels never qualify, and it would decrypt
    # each packet twice (once to find it is not for the fast path).
    _originals["_recv_data"] = SSHConnection.__dict__["_recv_data"]
    SSHClientConnection._recv_data = _receive  # type: ignore[method-assign]


def uninstall() -> None:
    """Put asyncssh's own ``_recv_data`` back (benchmarks and equivalence tests)."""
    if _originals.pop("_recv_data", None) is not None:
        del SSHClientConnection._recv_data  # inherits SSHConnection's again


_RECV_PKTHDR = SSHConnection._recv_pkthdr


def _receive(self: Any) -> None:
    """asyncssh's ``_recv_data``, with the channel data at the head of the buffer taken first."""
    self._reset_keepalive_timer()
    try:
        while self._inpbuf:
            if (
                getattr(self._recv_handler, "__func__", None) is _RECV_PKTHDR
                and self._auth_complete
                and self._decompressor is None
                and type(self._recv_encryption) in _AEAD_ENCRYPTIONS
                and SSHLogger._debug_level < _LOGS_PER_PACKET
                and not _take_channel_data(self)
            ):
                break
            if not self._recv_handler():
                break
    except DisconnectError as exc:
        self._send_disconnect(exc.code, exc.reason, exc.lang)
        self._force_close(exc)
    except Exception:  # as asyncssh: any other failure closes the connection
        self.internal_error()


def _take_channel_data(conn: Any) -> bool:
    """Handle the fast-path packets at the head of ``conn``'s buffer, in order.

    One function for the whole read: at 1,000 nodes every Python call per packet
    counts, so the checks and asyncssh's bookkeeping are inline (the docstring of the
    module lists them).

    Returns:
        True when the head packet is one for asyncssh's own path; False when the
        buffer holds no complete packet (or nothing).
    """
    encryption = conn._recv_encryption
    cipher = encryption._cipher
    aead = None
    if type(encryption) is GCMEncryption:
        aead = cipher.__dict__.get(_AEAD) or _new_aead(cipher)
    # asyncssh reads no payload of an ignore message from a Cisco server.
    ignore_ok = b"Cisco" not in conn._server_version
    buf = conn._inpbuf
    size, off = len(buf), 0
    channels, longest = conn._channels, conn._max_recv_pktlen
    try:
        while size - off >= conn._recv_blocksize:
            seq = conn._recv_seq
            if aead is not None:
                (pktlen,) = _LENGTH.unpack_from(buf, off)
            else:
                nonce = seq.to_bytes(8, "big")
                pktlen = int.from_bytes(cipher.decrypt_header(buf[off : off + 4], nonce), "big")
            if pktlen > longest or pktlen < _SMALLEST:
                return True  # asyncssh raises (too long) or handles the odd one
            end = off + 4 + pktlen + _TAG
            if end > size:
                return False
            if aead is not None:
                iv = cipher._iv
                try:
                    plain = aead.decrypt(iv, buf[off + 4 : end], buf[off : off + 4])
                except asyncssh_cipher.InvalidTag:
                    return True  # asyncssh's MACError
            else:
                body, tag = buf[off + 4 : end - _TAG], buf[end - _TAG : end]
                plain = cipher.verify_and_decrypt(buf[off : off + 4], body, nonce, tag)
                if plain is None:
                    return True
            padding, pkttype, field, datalen = _DATA.unpack_from(plain)
            if (
                not padding
                or not conn._transport
                or conn._kex is not None
                or not conn._kex_complete
            ):
                return True
            chan = None
            if pkttype == MSG_IGNORE:
                if not ignore_ok or _IGNORE_AT + field + padding != pktlen:
                    return True
            else:
                start = _DATA_AT.get(pkttype)
                if start is None:
                    return True
                datatype = None
                if pkttype == MSG_CHANNEL_EXTENDED_DATA:
                    datatype, datalen = _EXTENDED.unpack_from(plain, 6)
                chan = channels.get(field)
                if (
                    start + datalen + padding != pktlen
                    or not datalen
                    or type(chan) is not SSHClientChannel
                    or type(chan._session) not in _fast_sessions
                    or chan._recv_state != "open"
                    or chan._recv_paused
                    or chan._send_state in _DROPPING
                    or chan._encoding is not None
                    or datalen > chan._recv_window
                    or (datatype is not None and datatype not in chan._read_datatypes)
                ):
                    return True
            # asyncssh's order: cipher state and buffer, the packet, then the sequence.
            if aead is not None:
                invocation = (int.from_bytes(iv[4:], "big") + 1) & _INVOCATION
                cipher._iv = iv[:4] + invocation.to_bytes(8, "big")
            off = end
            if chan is not None:
                data = plain[start : start + datalen]
                chan._recv_window -= datalen
                if chan._recv_window < chan._init_recv_window / 2:
                    _deliver_adjusting(conn, chan, data, datatype)
                else:
                    chan._session.data_received(data, datatype)
                conn._auth_final = True
            if conn._transport:
                conn._recv_seq = (seq + 1) & 0xFFFFFFFF
        return False
    finally:
        if off:
            conn._inpbuf = buf[off:]


def _new_aead(cipher: Any) -> Any:
    """The ``AESGCM`` object for ``cipher``'s key, kept on it (asyncssh makes one per packet)."""
    aead = asyncssh_cipher.AESGCM(cipher._key)
    setattr(cipher, _AEAD, aead)
    return aead


def _deliver_adjusting(conn: Any, chan: Any, data: bytes, datatype: int | None) -> None:
    """asyncssh's ``_deliver_data`` when a window adjust is due, its packets in one write.

    asyncssh sends an ignore message before every packet it encrypts and writes each
    with its own ``send``: two system calls per window adjust. The bytes and their
    order are the same here; they go to the transport the connection had when the
    adjust began (a session that closes the connection meanwhile only schedules the
    transport's abort, as asyncssh's writes would have preceded it).
    """
    transport = conn._transport
    corked: list[bytes] = []
    conn._send = corked.append  # the instance attribute shadows SSHConnection._send
    try:
        chan._deliver_data(data, datatype)  # sends the window adjust, then delivers
    finally:
        del conn._send
        if corked and transport is not None:
            with contextlib.suppress(ConnectionError):  # as asyncssh's _send
                transport.write(b"".join(corked))
