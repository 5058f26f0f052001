"""Who a gpufleet process is to NATS, and how it knows the server is the right one.

NATS's own security, as nats-py offers it: a user and password or a token, an NKey
seed or a decentralized-JWT credentials file, TLS with a private CA and a client
certificate. Secrets are read from files named in ``[cluster]`` so that a config file
can be shown, diffed and logged; they never appear in a message (``redact``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SECRET_MAX_BYTES = 4096  # a password, token or seed; anything longer is a wrong file


class AuthError(ValueError):
    """A credential or certificate file cannot be used (the message says which, no secret)."""


@dataclass(frozen=True)
class NatsAuth:
    """The credentials and trust a connection presents; all optional."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    nkey_seed_file: Path | None = None
    creds_file: Path | None = None
    tls_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None

    @property
    def authenticated(self) -> bool:
        """Whether this presents any credential (the server can tell who we are)."""
        return bool(self.user or self.token or self.nkey_seed_file or self.creds_file)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The strings no message may contain."""
        return tuple(s for s in (self.password, self.token) if s)

    def connect_options(self, url: str) -> dict[str, Any]:
        """Keyword arguments for nats-py's ``Client.connect``.

        Raises:
            AuthError: a named file is missing or unreadable, or a certificate is invalid.
        """
        options: dict[str, Any] = {}
        if self.user:
            options["user"] = self.user
            options["password"] = self.password or ""
        if self.token:
            options["token"] = self.token
        if self.nkey_seed_file is not None:
            _readable(self.nkey_seed_file, "nats_nkey_seed_file")
            options["nkeys_seed"] = str(self.nkey_seed_file)
        if self.creds_file is not None:
            _readable(self.creds_file, "nats_creds_file")
            options["user_credentials"] = str(self.creds_file)
        if self.tls_ca_file or self.tls_cert_file or urlsplit(url).scheme == "tls":
            options["tls"] = self.tls_context()
            # A URL's host is the name the server certificate must carry.
            options["tls_hostname"] = urlsplit(url).hostname
        return options

    def tls_context(self) -> ssl.SSLContext:
        """A verifying client context: the private CA if named (else the system's), and
        the client certificate if named.

        Raises:
            AuthError: a file is missing or not a certificate or key.
        """
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            if self.tls_ca_file is not None:
                context.load_verify_locations(cafile=str(self.tls_ca_file))
            if self.tls_cert_file is not None:
                key = None if self.tls_key_file is None else str(self.tls_key_file)
                context.load_cert_chain(str(self.tls_cert_file), key)
        except (OSError, ssl.SSLError) as exc:
            raise AuthError(f"NATS TLS files: {exc.strerror or exc}") from None
        return context

    def scrub(self, text: str) -> str:
        """``text`` with every URL's user information and every secret replaced."""
        text = " ".join(redact(word) if "://" in word else word for word in text.split(" "))
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def redact(url: str) -> str:
    """``url`` without its password or token (``nats://user:***@host:4222``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if "@" not in parts.netloc:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, _ = userinfo.partition(":")
    shown = f"{user}:***" if sep else "***"  # a lone userinfo is a token
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def read_secret(path: Path, key: str) -> str:
    """The first line of a secret file (a password or token), without its newline.

    Raises:
        AuthError: missing, unreadable, empty or oversized.
    """
    data = _readable(path, key)
    if len(data) > SECRET_MAX_BYTES:
        raise AuthError(f"{key}: {path} is over {SECRET_MAX_BYTES} bytes; expected one secret")
    secret = data.decode("utf-8", "replace").splitlines()[0].strip() if data.strip() else ""
    if not secret:
        raise AuthError(f"{key}: {path} is empty")
    return secret


def _readable(path: Path, key: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise AuthError(f"{key}: cannot read {path}: {exc.strerror}") from None
