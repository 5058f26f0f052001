"""TLS and basic auth for the metrics endpoint, from a Prometheus ``web.yml`` (docs/metrics.md).

The file has the shape Prometheus' exporter-toolkit reads (``--web.config.file``
of node_exporter and Prometheus itself), so one file can serve both::

    tls_server_config:
      cert_file: server.crt          # relative paths are from the web.yml's directory
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
      client_ca_file: ca.crt
      min_version: TLS12             # TLS12 (default) or TLS13
    basic_auth_users:
      prometheus: $2y$10$...         # bcrypt hash, e.g. from `htpasswd -nBC 10 "" | tr -d ':\\n'`

Keys of the exporter-toolkit format that gpufleet does not implement (cipher
suites, HTTP/2, extra headers) are refused rather than silently ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml  # type: ignore[import-untyped]  # no stubs shipped; only safe_load is used

TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version"}
TLS_KEYS |= {"max_version"}
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
MAX_FILE_BYTES = 1 << 20
# Failed logins per client: a burst, then one more per refill period. A wrong password
# costs a bcrypt check (~50 ms of a core at cost 10); eight threads guessing drove
# `serve` to 1.7 cores before this. A throttled client is answered without bcrypt.
FAILURES_BURST = 5
FAILURE_REFILL_S = 2.0
MAX_TRACKED_CLIENTS = 4096  # beyond this the longest-quiet client is forgotten
MAX_VERIFIED = 64  # good (user, password) digests kept; a rotation adds one


class WebConfigError(ValueError):
    """The web config cannot be used; the message names the file, the key and the problem."""


@dataclass
class WebConfig:
    """What the endpoint enforces: a TLS context and the users allowed in (none: open)."""

    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)
    # Verified (user, password) digests: bcrypt costs ~50 ms per check at cost 10, and
    # Prometheus sends the same credentials on every scrape.
    _verified: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    clock: Callable[[], float] = time.monotonic
    # client -> (failures still allowed, when last counted)
    _failures: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)
    bcrypt_checks: int = 0  # passwords verified with bcrypt (the expensive path)
    throttled: int = 0  # requests answered 429 without checking their password

    @property
    def scheme(self) -> str:
        """``https`` with TLS, else ``http``."""
        return "http" if self.tls is None else "https"

    def check(self, header: str | None, client: str) -> str:
        """``ok``, ``denied`` or ``throttled`` (too many failed logins from ``client``
        lately: answered without running bcrypt). A password verified before passes
        even then (cached), so a scraper is not locked out by a guesser beside it.

        Runs bcrypt: call it off the event loop.
        """
        if not self.users or self._cached(header):
            return "ok"
        with self._lock:
            if not self._may_try(client):
                self.throttled += 1
                return "throttled"
        if self.authorized(header):
            return "ok"
        with self._lock:
            self._count_failure(client)
        return "denied"

    def _cached(self, header: str | None) -> bool:
        digest = self._digest(_basic_credentials(header))
        with self._lock:
            return digest is not None and digest in self._verified

    def _digest(self, credentials: tuple[str, bytes] | None) -> bytes | None:
        if credentials is None:
            return None
        user, password = credentials
        hashed = self.users.get(user)
        if hashed is None:
            return None
        return hashlib.sha256(b"\0".join((user.encode(), password, hashed))).digest()

    def _allowance(self, client: str) -> float:
        tokens, at = self._failures.get(client, (float(FAILURES_BURST), self.clock()))
        now = self.clock()
        return min(float(FAILURES_BURST), tokens + (now - at) / FAILURE_REFILL_S)

    def _may_try(self, client: str) -> bool:
        return self._allowance(client) >= 1.0

    def _count_failure(self, client: str) -> None:
        self._failures[client] = (self._allowance(client) - 1.0, self.clock())
        self._failures.move_to_end(client)
        while len(self._failures) > MAX_TRACKED_CLIENTS:
            self._failures.popitem(last=False)

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header lets the request in (always, without users).

        Runs bcrypt: call it off the event loop.
        """
        if not self.users:
            return True
        credentials = _basic_credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        hashed = self.users.get(user)
        if hashed is None:
            return False
        digest = hashlib.sha256(b"\0".join((user.encode(), password, hashed))).digest()
        with self._lock:
            if digest in self._verified:
                return True
            self.bcrypt_checks += 1
        try:
            ok = bcrypt.checkpw(password, hashed)
        except ValueError:  # a malformed hash in the file never lets anyone in
            return False
        if ok:
            with self._lock:
                if len(self._verified) >= MAX_VERIFIED:
                    self._verified.clear()  # only good passwords land here: rare
                self._verified.add(digest)
        return ok


def _basic_credentials(header: str | None) -> tuple[str, bytes] | None:
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None


def load_web_config(path: Path) -> WebConfig:
    """Read and check a ``web.yml``.

    Raises:
        WebConfigError: unreadable, not YAML, an unknown key, a bad value, or a
            certificate or key that does not load; one line naming file and key.
    """
    document = _read_yaml(path)
    unknown = sorted(set(document) - {"tls_server_config", "basic_auth_users"})
    if unknown:
        raise WebConfigError(f"{path}: {unknown[0]}: not supported by gpufleet")
    tls = document.get("tls_server_config")
    users = document.get("basic_auth_users") or {}
    if not isinstance(users, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in users.items()
    ):
        raise WebConfigError(f"{path}: basic_auth_users: expected user: bcrypt-hash pairs")
    for user, hashed in users.items():
        if not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise WebConfigError(f"{path}: basic_auth_users.{user}: expected a bcrypt hash")
    context = None if tls is None else _tls_context(path, tls)
    return WebConfig(tls=context, users={u: h.encode() for u, h in users.items()})


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise WebConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise WebConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        document = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WebConfigError(f"{path}: not valid YAML: {reason}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise WebConfigError(f"{path}: expected a mapping at the top level")
    return document


def _tls_context(path: Path, tls: Any) -> ssl.SSLContext:
    where = f"{path}: tls_server_config"
    if not isinstance(tls, dict):
        raise WebConfigError(f"{where}: expected a mapping")
    unknown = sorted(set(tls) - TLS_KEYS)
    if unknown:
        raise WebConfigError(f"{where}.{unknown[0]}: not supported by gpufleet")
    for key in ("cert_file", "key_file"):
        if not isinstance(tls.get(key), str):
            raise WebConfigError(f"{where}.{key}: required (a file name)")
    base = path.parent
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _version(where, tls, "min_version", "TLS12")
    context.maximum_version = _version(where, tls, "max_version", "TLS13")
    try:
        context.load_cert_chain(base / tls["cert_file"], base / tls["key_file"])
    except (OSError, ssl.SSLError) as exc:
        raise WebConfigError(f"{where}.cert_file: cannot load certificate and key: {exc}") from None
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth not in CLIENT_AUTH:
        choices = ", ".join(CLIENT_AUTH)
        raise WebConfigError(f"{where}.client_auth_type: expected one of {choices}")
    context.verify_mode = CLIENT_AUTH[auth]
    ca = tls.get("client_ca_file")
    if ca is not None:
        try:
            context.load_verify_locations(base / str(ca))
        except (OSError, ssl.SSLError) as exc:
            raise WebConfigError(f"{where}.client_ca_file: cannot load: {exc}") from None
    elif context.verify_mode != ssl.CERT_NONE:
        raise WebConfigError(f"{where}.client_ca_file: required with {auth}")
    return context


def _version(where: str, tls: dict[str, Any], key: str, default: str) -> ssl.TLSVersion:
    value = tls.get(key, default)
    if value not in VERSIONS:
        raise WebConfigError(f"{where}.{key}: expected TLS12 or TLS13")
    return VERSIONS[value]
