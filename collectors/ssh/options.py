"""Fleet-wide SSH settings and the asyncssh connection options built once from them."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncssh

from collectors.ssh.openssh_config import HostConfig, resolve_host

log = logging.getLogger(__name__)

# What ``ssh`` reads when no ``-F`` is given: the user's file, then the system's.
USER_SSH_CONFIG = "~/.ssh/config"
SYSTEM_SSH_CONFIG = "/etc/ssh/ssh_config"

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

# Off, whatever the ssh config says: a 1 Hz sample is ~1 KB, so zlib would save a link
# nothing and cost the controller a compressor and a decompressor per packet per node.
# Every SSH server supports "none".
NO_COMPRESSION: tuple[str, ...] = ("none",)

_HostKey = tuple[str, str | None, int | None]


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
        encryption_algs: cipher preference; ``None`` keeps the library default.
        compression_algs: compression preference; ``None`` keeps the library's and
            the ssh config's (``Compression yes`` makes asyncssh choose zlib).
        ssh_config: OpenSSH client config files; ``()`` is what ``ssh`` reads
            (``~/.ssh/config`` and ``/etc/ssh/ssh_config`` when present), ``None``
            loads none.
        agent_bundle: ``(file name, content)`` of the agent zipapp; ``None`` builds
            it with :func:`collectors.bundle.agent_zipapp_bytes`.
    """

    connect_timeout: float = 10.0
    keepalive_interval: float = 5.0
    keepalive_count_max: int = 3
    max_concurrent_connects: int = 64
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    encryption_algs: tuple[str, ...] | None = PREFERRED_CIPHERS
    compression_algs: tuple[str, ...] | None = NO_COMPRESSION
    ssh_config: tuple[str, ...] | None = ()
    agent_bundle: tuple[str, bytes] | None = None
    _keys: dict[tuple[str, ...], Sequence[asyncssh.SSHKeyPair]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _known: dict[tuple[str, ...], tuple[object, asyncssh.SSHKnownHosts]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _hosts: dict[_HostKey, asyncssh.SSHClientConnectionOptions] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _resolved: dict[_HostKey, HostConfig] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _shared: dict[tuple[object, ...], asyncssh.SSHClientConnectionOptions] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _warned: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    def resolved(self, host: str, user: str | None = None, port: int | None = None) -> HostConfig:
        """What the ssh config says for ``host`` (``user``/``port`` as ``ssh -l``/``-p``), once.

        Raises:
            SshConfigError: the config has a line ``ssh`` would refuse.
        """
        key = (host, user, port)
        found = self._resolved.get(key)
        if found is None:
            files, system = self._config_files()
            found = resolve_host(files, host, user=user, port=port, system_files=system)
            self._resolved[key] = found
        return found

    def _config_files(self) -> tuple[list[str], list[str]]:
        """(user files, system files) to read, as ``ssh`` picks them."""
        if self.ssh_config is None:
            return [], []
        if self.ssh_config:
            return list(self.ssh_config), []
        user = os.path.expanduser(USER_SSH_CONFIG)
        return _readable(user), _readable(SYSTEM_SSH_CONFIG)

    def host_options(
        self, host: str, user: str | None = None, port: int | None = None
    ) -> asyncssh.SSHClientConnectionOptions:
        """asyncssh options for ``host``, with the ssh config evaluated for it, built once.

        The per-host facts (HostName, Port, User, IdentityFile, ProxyJump, known hosts)
        come from :meth:`resolved` and are passed explicitly; asyncssh's own reading
        of the config supplies the rest, unless it disagrees with ``ssh`` on where
        the host is or cannot read the file (it splits ``Host a,b`` on the comma and
        reads ``Include`` globs unsorted), then none of it is used.
        """
        key = (host, user, port)
        built = self._hosts.get(key)
        if built is None:
            resolved = self.resolved(host, user, port)
            shared = self._shared_key(resolved)
            built = self._shared.get(shared) if shared is not None else None
            if built is None:
                built = self._build_host_options(resolved)
                if shared is not None:
                    self._shared[shared] = built
            self._hosts[key] = built
        return built

    def _shared_key(self, resolved: HostConfig) -> tuple[object, ...] | None:
        """What the options of a host hold, when no ssh config file is read; else None.

        Without a file, nothing in them depends on the host name (``asyncssh.connect``
        is given each node's HostName): nodes with the same user, port and keys share
        one object, built once instead of once a node (0.29 ms each, ~0.3 s of a
        1,000-node start: bench/bench_host_options.py).
        """
        if self._config_files()[0]:
            return None
        return (resolved.user, resolved.port, resolved.identity_files, resolved.proxy_command)

    def _build_host_options(self, resolved: HostConfig) -> asyncssh.SSHClientConnectionOptions:
        kwargs = self._common_kwargs()
        kwargs.update(
            username=resolved.user,
            port=resolved.port,
            client_keys=self.client_keys(resolved.identity_files, config=True),
            tunnel=None,  # jump hosts are opened by connect_node, verified like nodes
        )
        if resolved.proxy_command is None:
            kwargs["proxy_command"] = None
        # asyncssh reads the user's files only, as before: the system file's other
        # settings (SendEnv, GSSAPI...) would change what the agent's channel gets.
        files, _ = self._config_files()
        try:
            built = asyncssh.SSHClientConnectionOptions(config=files, host=resolved.host, **kwargs)
        except (ValueError, OSError) as exc:  # asyncssh.config.ConfigParseError is a ValueError
            differs = f"asyncssh cannot read the ssh config ({exc})"
        else:
            if built.host.lower() == resolved.hostname:
                return built
            differs = f"asyncssh reads HostName {built.host!r}, ssh {resolved.hostname!r}"
        self._warn_once(
            resolved.host,
            f"{resolved.host}: {differs}; only HostName, Port, User, IdentityFile, ProxyJump "
            "and the known_hosts files of the ssh config apply to it",
        )
        return asyncssh.SSHClientConnectionOptions(config=None, host=resolved.hostname, **kwargs)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)

    def _common_kwargs(self) -> dict[str, object]:
        kwargs: dict[str, object] = {
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": self.keepalive_interval,
            "keepalive_count_max": self.keepalive_count_max,
        }
        if self.encryption_algs is not None:
            kwargs["encryption_algs"] = list(self.encryption_algs)
        if self.compression_algs is not None:
            kwargs["compression_algs"] = list(self.compression_algs)
        return kwargs

    def client_keys(
        self, identity_files: tuple[str, ...], *, config: bool = False
    ) -> Sequence[asyncssh.SSHKeyPair]:
        """The key pairs of ``identity_files``, read from disk once per fleet.

        A file that does not exist is skipped, as ``ssh`` skips it: many configs list
        keys that exist only on some machines. Keys named by the ssh config that are
        passphrase-protected are skipped too (``ssh`` would prompt; the ssh-agent
        may still hold them); a gpufleet-configured one raises.
        """
        cache_key = (*identity_files, f"config={config}")
        if cache_key not in self._keys:
            present = [path for path in identity_files if os.path.isfile(os.path.expanduser(path))]
            for path in sorted(set(identity_files) - set(present)):
                # As ssh: silent for the ssh config's keys, a warning for one named outright.
                if config:
                    log.debug("identity file %s does not exist, skipped", path)
                else:
                    self._warn_once(path, f"identity file {path} does not exist, skipped")
            self._keys[cache_key] = (
                [pair for path in present for pair in self._config_key(path)]
                if config
                else asyncssh.load_keypairs(present)
            )
        return self._keys[cache_key]

    def _config_key(self, path: str) -> Sequence[asyncssh.SSHKeyPair]:
        """One ssh config identity file's keys; one ``ssh`` cannot load is skipped, as ssh does."""
        try:
            return asyncssh.load_keypairs(path, ignore_encrypted=True)
        except (asyncssh.KeyImportError, OSError, ValueError) as exc:
            self._warn_once(path, f"identity file {path} cannot be loaded ({exc}), skipped")
            return []

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


def _readable(path: str) -> list[str]:
    return [path] if os.access(path, os.R_OK) else []


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)
