"""Who may open the dashboard in a browser: a token, then a session cookie derived from it.

The browser presents the token once, in the URL it was given (``/?token=...``); the
answer sets a cookie that is a keyed hash of the token, HttpOnly and SameSite=Strict,
and every other path (the terminal's websocket, its scripts) needs that cookie. The
websocket URL cannot carry the token: the page's script appends ``?width=..`` to it.
SameSite=Strict keeps another site's page from opening the websocket with the cookie.
Comparisons run in constant time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from urllib.parse import urlencode

from exporter.addr import is_loopback

COOKIE = "gpufleet_web"
TOKEN_MIN_CHARS = 16
TOKEN_MAX_BYTES = 4096  # a token file larger than this is the wrong file
_SESSION_KEY = b"gpufleet web session"


class TokenError(ValueError):
    """The token file cannot be used (the message says why, never the token)."""


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def read_token(path: Path) -> str:
    """The token in ``path``: its first line, stripped.

    Raises:
        TokenError: the file is missing, unreadable, too large, or the token too short.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(TOKEN_MAX_BYTES + 1)
    except OSError as exc:
        raise TokenError(f"[web] token_file {path}: {exc.strerror}") from None
    if len(data) > TOKEN_MAX_BYTES:
        raise TokenError(f"[web] token_file {path}: larger than {TOKEN_MAX_BYTES} bytes")
    lines = data.decode("utf-8", "replace").splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < TOKEN_MIN_CHARS or not token.isprintable():
        raise TokenError(
            f"[web] token_file {path}: expected one line of at least {TOKEN_MIN_CHARS}"
            " printable characters"
        )
    return token


def _equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


class Access:
    """Checks a presented token or session cookie against the one token of this run."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.session = hmac.new(token.encode("utf-8"), _SESSION_KEY, hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the token (constant time; None is never)."""
        return given is not None and _equal(given, self._token)

    def query(self) -> str:
        """``token=...`` for the URL printed to the operator (once)."""
        return urlencode({"token": self._token})

    def session_ok(self, cookie: str | None) -> bool:
        """Whether ``cookie`` is this run's session value (constant time)."""
        return cookie is not None and _equal(cookie, self.session)


def exposure_warning(host: str, port: int) -> str | None:
    """The warning ``gpufleet web`` logs when it listens beyond loopback, else None."""
    if is_loopback(host):
        return None
    return (
        f"gpufleet web listens on {host}:{port}, beyond loopback: anyone who can reach it"
        " and holds the token sees node names, GPU serials and fleet health, over plain"
        " HTTP (the token travels unencrypted); prefer 127.0.0.1 and an SSH tunnel"
    )
