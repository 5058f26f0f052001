"""Fleet-wide SSH settings and the asyncssh connection options built once from them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncssh

# AES-GCM first: asyncssh's chacha20-poly1305 builds three ciphers and a Poly1305 per
# packet in Python, AES-GCM is one AESGCM call (performance.md section 2: ~27% less
# client CPU per message). The rest keep servers without GCM reachable.
PREFERRED_CIPHERS: tuple[str, ...] = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)


@dataclass(frozen=True)
class SshOptions:
    """Settings shared by every node connection of a fleet.

    Attributes:
        connect_timeout: seconds for TCP connect, key exchange and authentication.
        keepalive_interval: seconds between SSH keepalives (asyncssh's default, 0,
            would never notice a silently dead link).
        keepalive_count_max: unanswered keepalives before the link counts as dead.
        max_concurrent_connects: handshakes in flight at once (a fleet start must
            not be a handshake storm that trips sshd's MaxStartups).
        backoff_base: first retry delay in seconds; doubles per failure.
        backoff_cap: the longest retry delay in seconds.
        stale_after_intervals: a connected node with no sample for this many
            intervals is ``stale``.
        encryption_algs: cipher preference; ``None`` keeps the library default.
        ssh_config: OpenSSH client config files; ``()`` is ``~/.ssh/config`` when
            present, ``None`` loads none.
        agent_bundle: ``(file name, content)`` of the agent zipapp; ``None`` builds
            it with :func:`collectors.bundle.agent_zipapp_bytes`.
    """

    connect_timeout: float = 10.0
    keepalive_interval: float = 5.0
    keepalive_count_max: int = 3
    max_concurrent_connects: int = 64
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    stale_after_intervals: float = 3.0
    encryption_algs: tuple[str, ...] | None = PREFERRED_CIPHERS
    ssh_config: tuple[str, ...] | None = ()
    agent_bundle: tuple[str, bytes] | None = None
    _keys: dict[tuple[str, ...], Sequence[asyncssh.SSHKeyPair]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _known: dict[tuple[str, ...], tuple[object, asyncssh.SSHKnownHosts]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _hosts: dict[str, asyncssh.SSHClientConnectionOptions] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def host_options(self, host: str) -> asyncssh.SSHClientConnectionOptions:
        """asyncssh options for ``host``, with the ssh config evaluated for it, built once.

        asyncssh applies ``Host``/``Match`` blocks when options are constructed, so one
        options object for the whole fleet would miss every per-host setting
        (HostName, User, Port, IdentityFile, ProxyJump, UserKnownHostsFile).
        """
        built = self._hosts.get(host)
        if built is None:
            config = self.ssh_config if self.ssh_config is None else list(self.ssh_config)
            built = asyncssh.SSHClientConnectionOptions(
                config=config, host=host, **self._common_kwargs()
            )
            self._hosts[host] = built
        return built

    def _common_kwargs(self) -> dict[str, object]:
        kwargs: dict[str, object] = {
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": self.keepalive_interval,
            "keepalive_count_max": self.keepalive_count_max,
        }
        if self.encryption_algs is not None:
            kwargs["encryption_algs"] = list(self.encryption_algs)
        return kwargs

    def client_keys(self, identity_files: tuple[str, ...]) -> Sequence[asyncssh.SSHKeyPair]:
        """The key pairs of ``identity_files``, read from disk once per fleet."""
        if identity_files not in self._keys:
            self._keys[identity_files] = asyncssh.load_keypairs(list(identity_files))
        return self._keys[identity_files]

    def known_hosts(self, paths: tuple[str, ...]) -> asyncssh.SSHKnownHosts:
        """The known_hosts files at ``paths`` (missing ones skipped), parsed once per change.

        asyncssh re-reads a known_hosts path on every connection: with one line per
        node that is quadratic in the fleet size (300 nodes cost 4 s of CPU).
        """
        stamp = tuple(_stamp(path) for path in paths)
        cached = self._known.get(paths)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        present = [path for path, mark in zip(paths, stamp, strict=True) if mark is not None]
        known = asyncssh.read_known_hosts(present) if present else asyncssh.import_known_hosts("")
        self._known[paths] = (stamp, known)
        return known

    def backoff(self, failures: int, jitter: float) -> float:
        """Delay before retry number ``failures`` (1-based); ``jitter`` in [0, 1)."""
        delay = min(self.backoff_cap, self.backoff_base * 2.0 ** max(0, failures - 1))
        # Equal jitter: at least half the delay, so a fleet restart spreads out but
        # a flapping node still backs off.
        return delay * (0.5 + 0.5 * jitter)


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)
