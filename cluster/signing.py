"""Shards sign what they publish; viewers keep only what the right shard signed.

Transport security says who may publish on a subject; it does not help a viewer
once a credential leaks or a server is shared. So each shard holds an Ed25519 key
(``[cluster] signing_key_file``), every summary part and event batch travels in a
``Sealed`` envelope (the shard number, the body, the signature over both), and a
viewer configured with the shards' public keys (``[cluster] shard_public_keys``, in
shard order) drops what is unsigned, from a shard it has no key for, or badly
signed, counting each reason. ``owned_nodes`` then drops nodes a shard claims but
rendezvous hashing gives to another.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from cluster.shards import owner

log = logging.getLogger(__name__)

KEY_FILE_MAX_BYTES = 4096


class SigningKeyError(ValueError):
    """A signing key or public key cannot be used (the message says which, no key bytes)."""


class Sealed(msgspec.Struct, array_like=True, frozen=True):
    """``body`` as shard ``shard`` signed it: the signature covers the shard number too,
    so a body cannot be replayed under another shard's name."""

    shard: int
    body: bytes
    signature: bytes


_SEALED = msgspec.msgpack.Decoder(Sealed)
_SEALED_HEADER = 0x93  # MessagePack fixarray of 3: a sealed envelope's first byte
_ENCODER = msgspec.msgpack.Encoder()


def _signed_bytes(shard: int, body: bytes) -> bytes:
    return shard.to_bytes(4, "big") + body


@dataclass(frozen=True)
class ShardSigner:
    """Shard ``shard``'s private key, sealing what it publishes."""

    shard: int
    key: Ed25519PrivateKey = field(repr=False)

    def seal(self, body: bytes) -> bytes:
        signature = self.key.sign(_signed_bytes(self.shard, body))
        return _ENCODER.encode(Sealed(self.shard, body, signature))


@dataclass
class ShardKeys:
    """The shards' public keys (shard K's at position K-1) and what was dropped, by reason."""

    keys: Sequence[Ed25519PublicKey]
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def count(self) -> int:
        """How many shards the fleet has: one key each."""
        return len(self.keys)

    def open(self, data: bytes) -> tuple[int, bytes] | None:
        """The shard and body of a sealed message, or None (and the drop counted)."""
        try:
            sealed = _SEALED.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.dropped["unsigned"] += 1
            return None
        if not 1 <= sealed.shard <= len(self.keys):
            self.dropped["unknown shard"] += 1
            return None
        try:
            self.keys[sealed.shard - 1].verify(
                sealed.signature, _signed_bytes(sealed.shard, sealed.body)
            )
        except InvalidSignature:
            self.dropped["bad signature"] += 1
            return None
        return sealed.shard, sealed.body

    def owns(self, shard: int, node: str) -> bool:
        """Whether rendezvous hashing over this fleet's shards gives ``node`` to ``shard``;
        counts a drop when it does not (a shard claiming another's or a phantom node)."""
        if owner(node, len(self.keys)) == shard:
            return True
        self.dropped["node not the shard's"] += 1
        return False


_warned_unchecked = False


def unverified_body(data: bytes) -> bytes:
    """The body of a sealed message, unchecked, for a viewer given no public keys (it
    trusts whatever NATS lets through, as before signing); plain bytes are returned as
    they are. Warns once that signatures go unchecked."""
    if not data[:1] or data[0] != _SEALED_HEADER:
        return data
    try:
        sealed = _SEALED.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return data
    global _warned_unchecked
    if not _warned_unchecked:
        _warned_unchecked = True
        log.warning(
            "shards sign what they publish but no shard_public_keys are configured here: "
            "signatures are not checked"
        )
    return sealed.body


def load_signer(path: Path, shard: int) -> ShardSigner:
    """Shard ``shard``'s key from a PEM file (``openssl genpkey -algorithm ed25519``).

    Raises:
        SigningKeyError: missing, unreadable, or not an Ed25519 private key.
    """
    try:
        data = path.read_bytes()[: KEY_FILE_MAX_BYTES + 1]
    except OSError as exc:
        message = f"cluster.signing_key_file: cannot read {path}: {exc.strerror}"
        raise SigningKeyError(message) from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"cluster.signing_key_file: {path} is not an Ed25519 private key")
    return ShardSigner(shard, key)


def parse_public_key(text: str) -> Ed25519PublicKey:
    """A public key as base64 of its 32 raw bytes.

    Raises:
        SigningKeyError: not base64 of 32 bytes.
    """
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise SigningKeyError(f"expected base64 of a 32-byte Ed25519 public key, got {text!r}")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_key_text(key: Ed25519PrivateKey) -> str:
    """The config form of ``key``'s public half (what ``shard_public_keys`` lists)."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    """``key`` as an unencrypted PKCS#8 PEM (what ``signing_key_file`` holds)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
