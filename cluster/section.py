"""[cluster] running as one of several shards, joined through NATS (docs/scale-out.md)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from cluster.auth import NatsAuth, read_secret
from cluster.shards import STALE_INTERVALS, TAKEOVER_AFTER_S, ShardSpec, parse_shard
from cluster.signing import (
    ShardKeys,
    ShardSigner,
    load_signer,
    parse_public_key,
)
from fleet.settings.base import Section


class ClusterSection(Section):
    """[cluster] running as one of several shards, joined through NATS (docs/scale-out.md)."""

    shard: str | None = None
    """This collector's share of the hosts as "K/N" (shard K of N, 1-based): it watches
    only the hosts that rendezvous hashing on the host name assigns to K. Unset: every
    host. ``gpufleet serve --shard K/N`` overrides it."""
    nats_url: str | None = None
    """NATS server the shards publish to and dashboards attach through, e.g.
    "nats://127.0.0.1:4222". Unset: the shard publishes nothing."""
    stale_intervals: float = Field(default=STALE_INTERVALS, ge=1.0, le=100.0)
    """A shard silent for this many of its tick intervals has its nodes shown as
    `unmonitored` by attached dashboards (fewer flap on a loaded shard host)."""
    takeover_after_s: float = Field(default=TAKEOVER_AFTER_S, ge=0.0, le=3600.0)
    """A shard not heard for this many seconds has its nodes collected by the other
    shards (each node by the live shard that rendezvous hashing over the live shards
    picks) until it is heard again, when they hand them back at once. 0: never. Keep it
    above ``stale_intervals`` x ``[fleet] interval``, so dashboards see the shard silent
    before its nodes arrive from another."""

    nats_user: str | None = None
    """NATS user name; its password is read from ``nats_password_file``."""
    nats_password_file: Path | None = None
    """File holding the NATS user's password (first line). Kept out of the config so the
    config can be shared and logged; relative paths are from the working directory."""
    nats_token_file: Path | None = None
    """File holding a NATS authentication token (first line), instead of a user."""
    nats_nkey_seed_file: Path | None = None
    """NKey seed file (``SU...``): the server knows this process by the NKey's public key."""
    nats_creds_file: Path | None = None
    """Decentralized-JWT credentials file (``nsc generate creds``): user JWT and NKey seed."""
    nats_tls_ca_file: Path | None = None
    """CA certificate(s) the NATS server's certificate must chain to (a private CA).
    Unset: the system's trust store. A server the CA does not vouch for is refused."""
    nats_tls_cert_file: Path | None = None
    """Client certificate presented to NATS (servers with ``verify: true``)."""
    nats_tls_key_file: Path | None = None
    """Private key of ``nats_tls_cert_file`` (unset: the key is in the certificate file)."""

    signing_key_file: Path | None = None
    """This shard's Ed25519 private key (PEM: ``openssl genpkey -algorithm ed25519``): it
    signs every summary and event batch it publishes. Unset: published unsigned."""
    shard_public_keys: tuple[str, ...] = ()
    """Every shard's public key, shard 1's first, as base64 of its 32 raw bytes
    (``openssl pkey -in KEY -pubout -outform DER | tail -c 32 | base64``). Set: viewers
    drop what is unsigned, from an unknown shard, or for a node rendezvous hashing over
    this many shards gives to another shard, counting each."""

    @field_validator("shard_public_keys")
    @classmethod
    def _valid_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for text in value:
            parse_public_key(text)  # raises ValueError saying what was expected
        return value

    @field_validator("shard")
    @classmethod
    def _valid_shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)  # raises ValueError saying what was expected
        return value

    @field_validator("nats_url")
    @classmethod
    def _valid_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("nats://", "tls://")):
            raise ValueError(f"expected a nats:// or tls:// URL, got {value!r}")
        return value

    def nats_auth(self) -> NatsAuth:
        """The credentials and trust for NATS, secrets read from their files.

        Raises:
            AuthError: a secret file is missing, empty or unreadable.
        """
        password = None
        if self.nats_password_file is not None:
            password = read_secret(self.nats_password_file, "cluster.nats_password_file")
        token = None
        if self.nats_token_file is not None:
            token = read_secret(self.nats_token_file, "cluster.nats_token_file")
        return NatsAuth(
            user=self.nats_user,
            password=password,
            token=token,
            nkey_seed_file=self.nats_nkey_seed_file,
            creds_file=self.nats_creds_file,
            tls_ca_file=self.nats_tls_ca_file,
            tls_cert_file=self.nats_tls_cert_file,
            tls_key_file=self.nats_tls_key_file,
        )

    def shard_keys(self) -> ShardKeys | None:
        """The shards' public keys for checking what they publish; None when not listed."""
        if not self.shard_public_keys:
            return None
        return ShardKeys([parse_public_key(text) for text in self.shard_public_keys])

    def signer(self, shard: int) -> ShardSigner | None:
        """Shard ``shard``'s signer, None without ``signing_key_file``.

        Raises:
            SigningKeyError: the key file cannot be read or is not an Ed25519 key.
        """
        if self.signing_key_file is None:
            return None
        return load_signer(self.signing_key_file, shard)

    @property
    def shard_spec(self) -> ShardSpec | None:
        """``shard`` parsed, or None when this collector watches every host."""
        return None if self.shard is None else parse_shard(self.shard)
