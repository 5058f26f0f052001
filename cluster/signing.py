"""Shards sign what they publish; viewers keep only what the right shard signed.

Transport security says who may publish on a subject; it does not help a viewer
once a credential leaks or a server is shared. So each shard holds an Ed25519 key
(``[cluster] signing_key_file``), every summary part and event batch travels in a
``Sealed`` envelope (the shard number, the body, the signature over both), and a
viewer configured with the shards' public keys (``[cluster] shard_public_keys``, in
shard order) drops what is unsigned, from a shard it has no key for, or badly
signed, counting each reason. ``owns`` then drops nodes a shard claims but
rendezvous hashing gives to another, unless the shard stands in for a silent owner.

A shard collecting a silent shard's nodes (``cluster.takeover``) says which shards it
stands in for in the envelope, under its signature (``Sealed.adopting``). A viewer
accepts such a node only while it sees the owner silent itself and rendezvous hashing
over the shards both call live gives the node to the signer.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from cluster.shards import owner, owner_among

log = logging.getLogger(__name__)

KEY_FILE_MAX_BYTES = 4096


class SigningKeyError(ValueError):
    """A signing key or public key cannot be used (the message says which, no key bytes)."""


class Sealed(msgspec.Struct, array_like=True, frozen=True):
    """``body`` as shard ``shard`` signed it: the signature covers the shard number too,
    so a body cannot be replayed under another shard's name, and the shards it stands
    in for (``adopting``, left out of the envelope when there are none)."""

    shard: int
    body: bytes
    signature: bytes
    adopting: tuple[int, ...] = ()


class _Unclaimed(msgspec.Struct, array_like=True, frozen=True):
    """A ``Sealed`` with no ``adopting``, as sent: the three fields every viewer reads
    (msgspec writes an array-like struct's trailing defaults out)."""

    shard: int
    body: bytes
    signature: bytes


_SEALED = msgspec.msgpack.Decoder(Sealed)
# MessagePack fixarray of 3 or 4: a sealed envelope's first byte (4 with ``adopting``).
_SEALED_HEADERS = (0x93, 0x94)
_ENCODER = msgspec.msgpack.Encoder()
# Never the first byte of MessagePack: signed bytes with a claim cannot read as a body.
_CLAIM_MARK = b"\xc1"


def _signed_bytes(shard: int, body: bytes, adopting: tuple[int, ...] = ()) -> bytes:
    head = shard.to_bytes(4, "big")
    if not adopting:
        return head + body  # what every shard signed before standing in for another
    claim = len(adopting).to_bytes(2, "big") + b"".join(k.to_bytes(2, "big") for k in adopting)
    return head + _CLAIM_MARK + claim + body


@dataclass(frozen=True)
class ShardSigner:
    """Shard ``shard``'s private key, sealing what it publishes."""

    shard: int
    key: Ed25519PrivateKey = field(repr=False)

    def seal(self, body: bytes, adopting: tuple[int, ...] = ()) -> bytes:
        """``body`` signed; ``adopting``: the silent shards whose nodes this one collects."""
        signature = self.key.sign(_signed_bytes(self.shard, body, adopting))
        if not adopting:
            return _ENCODER.encode(_Unclaimed(self.shard, body, signature))
        return _ENCODER.encode(Sealed(self.shard, body, signature, adopting))


@dataclass
class ShardKeys:
    """The shards' public keys (shard K's at position K-1) and what was dropped, by reason."""

    keys: Sequence[Ed25519PublicKey]
    dropped: Counter[str] = field(default_factory=Counter)
    # The shards each shard stood in for in its latest verified message.
    claims: dict[int, tuple[int, ...]] = field(default_factory=dict)

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
                sealed.signature, _signed_bytes(sealed.shard, sealed.body, sealed.adopting)
            )
        except InvalidSignature:
            self.dropped["bad signature"] += 1
            return None
        self.claims[sealed.shard] = sealed.adopting
        return sealed.shard, sealed.body

    def owns(self, shard: int, node: str, silent: Collection[int] = ()) -> bool:
        """Whether ``node`` is ``shard``'s to report; counts a drop when it is not (a
        shard claiming another's node, a live shard's node or a phantom node).

        It is when rendezvous hashing over this fleet's shards gives it to ``shard``, or
        when its owner is one the shard stands in for (its latest claim) and one this
        viewer sees ``silent`` too, and hashing over the shards not silent for both
        gives it to ``shard``: the adopter every live shard computes.
        """
        count = len(self.keys)
        home = owner(node, count)
        if home == shard:
            return True
        agreed = set(self.claims.get(shard, ())).intersection(silent)
        if home in agreed:
            live = [k for k in range(1, count + 1) if k not in agreed]
            if owner_among(node, live) == shard:
                return True
        self.dropped["node not the shard's"] += 1
        return False


_warned_unchecked = False


def unverified_body(data: bytes) -> bytes:
    """The body of a sealed message, unchecked, for a viewer given no public keys (it
    trusts whatever NATS lets through, as before signing); plain bytes are returned as
    they are. Warns once that signatures go unchecked."""
    if not data[:1] or data[0] not in _SEALED_HEADERS:
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
