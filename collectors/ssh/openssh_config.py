"""What OpenSSH's client config says for one host, resolved as ``ssh`` (9.2) resolves it.

asyncssh reads the same files but differs from ``ssh`` where it matters to a fleet: it
splits ``Host`` patterns on commas, reads ``Include`` globs unsorted, does not expand
tokens in ``UserKnownHostsFile``, ignores ``~/.ssh/known_hosts2`` and fails on a missing
``IdentityFile``. The per-host facts a connection needs (HostName, Port, User,
IdentityFile, ProxyJump, known_hosts files) therefore come from here; asyncssh keeps
the rest. Rules follow ssh_config(5) and ``readconf.c``; tests compare with ``ssh -G``.
"""

from __future__ import annotations

import functools
import getpass
import glob
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collectors.ssh.config_match import match_host_line, match_line, match_subjects
from collectors.ssh.config_syntax import SshConfigError, expand_tilde, split_keyword, split_words
from collectors.ssh.config_tokens import expand_path_list, host_tokens, resolve_hostname
from collectors.ssh.target import JumpHop, parse_jump_chain

DEFAULT_PORT = 22
_DEFAULT_KEYS = ("rsa", "ecdsa", "ecdsa_sk", "ed25519", "ed25519_sk", "xmss", "dsa")
DEFAULT_IDENTITY_FILES: tuple[str, ...] = tuple(f"~/.ssh/id_{name}" for name in _DEFAULT_KEYS)
DEFAULT_USER_KNOWN_HOSTS: tuple[str, ...] = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS: tuple[str, ...] = (
    "/etc/ssh/ssh_known_hosts",
    "/etc/ssh/ssh_known_hosts2",
)
_MAX_INCLUDE_DEPTH = 16  # as OpenSSH's READCONF_MAX_DEPTH


@dataclass(frozen=True, slots=True)
class HostConfig:
    """The connection facts of one host after every config file was read.

    Attributes:
        host: the name asked for (``%n``), as given.
        hostname: where to connect: ``HostName`` with ``%h`` expanded; a name in
            lower case, an IP address as written (as ``ssh``).
        port: ``Port``, else 22.
        user: ``User``, else the local user.
        identity_files: ``IdentityFile`` paths with ``~`` and tokens expanded, in
            order, duplicates dropped; OpenSSH's default key names when none is set
            (``IdentityFile none`` sets none and names no file). A file that does not
            exist stays listed: the key loader skips it, as ``ssh`` does.
        proxy_jump: the ProxyJump hops, first hop first; ``()`` for none.
        proxy_command: ``ProxyCommand`` when it came first (ProxyJump then ignored).
        user_known_hosts: ``UserKnownHostsFile`` paths, expanded; ``()`` for ``none``.
        global_known_hosts: ``GlobalKnownHostsFile`` paths, as written (OpenSSH 9.2
            does not expand them).
    """

    host: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    proxy_jump: tuple[JumpHop, ...]
    proxy_command: str | None
    user_known_hosts: tuple[str, ...]
    global_known_hosts: tuple[str, ...]

    @property
    def known_hosts_files(self) -> tuple[str, ...]:
        """Every file a host key is looked up in: the user's, then the global ones."""
        return self.user_known_hosts + self.global_known_hosts


@dataclass
class _Settings:
    """First-value-wins slots, filled while the files are read."""

    hostname: str | None = None
    port: int | None = None
    user: str | None = None
    identity_files: list[str] = field(default_factory=list)
    proxy_jump: str | None = None
    proxy_command: str | None = None
    user_known_hosts: list[str] | None = None
    global_known_hosts: list[str] | None = None
    host_key_alias: str | None = None


# One meaningful line of a config file: keyword (lower case), its words, "file line N".
ConfigLine = tuple[str, tuple[str, ...], str]


def config_lines(path: str) -> tuple[ConfigLine, ...]:
    """The lines of ``path`` that say something, split into words, syntax checked.

    Read once per change of the file: a fleet resolves every node through the same
    few files.

    Raises:
        SshConfigError: the file cannot be read, or a line ssh would refuse.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise SshConfigError(f"{path}: cannot read the ssh config: {exc.strerror}") from None
    return _parsed_file(path, info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=64)
def _parsed_file(path: str, mtime_ns: int, size: int) -> tuple[ConfigLine, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise SshConfigError(f"{path}: cannot read the ssh config: {exc.strerror}") from None
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path} line {number}"
        keyword, rest = split_keyword(line)
        if not keyword or keyword.startswith("#"):
            continue
        try:
            args = split_words(rest)
        except ValueError as exc:
            raise SshConfigError(f"{where}: {exc}") from None
        if not args:
            raise SshConfigError(f"{where}: no argument after keyword {keyword!r}")
        _check_syntax(keyword, args, where)  # as ssh: a bad value anywhere refuses the file
        lines.append((keyword, tuple(args), where))
    return tuple(lines)


@dataclass
class _Reader:
    host: str
    home: str
    local_user: str
    settings: _Settings

    def read_file(
        self, path: str, active: bool, *, depth: int, included: bool, system: bool
    ) -> None:
        if depth > _MAX_INCLUDE_DEPTH:
            raise SshConfigError(f"{path}: Include nested deeper than {_MAX_INCLUDE_DEPTH}")
        # An included file starts in its includer's block; a Host/Match there that the
        # includer's block excludes can never match (OpenSSH's SSHCONF_NEVERMATCH).
        never = included and not active
        for line in config_lines(path):
            active = self._line(line, active, never, (depth, system))

    def _line(self, line: ConfigLine, active: bool, never: bool, file: tuple[int, bool]) -> bool:
        keyword, args, where = line
        if keyword == "host":
            return match_host_line(self.host, args, where) and not never
        if keyword == "match":
            state = self.settings
            user = state.user or self.local_user
            subjects = match_subjects(self.host, state.hostname, user, self.local_user)
            return match_line(args, subjects, where) and not never
        if keyword == "include":
            depth, system = file
            for path in self._include_paths(args, where, system):
                self.read_file(path, active, depth=depth + 1, included=True, system=system)
        elif active:
            _apply(self.settings, keyword, args)
        return active

    def _include_paths(self, patterns: Sequence[str], where: str, system: bool) -> list[str]:
        paths: list[str] = []
        for pattern in patterns:
            if system and pattern.startswith("~"):
                raise SshConfigError(f"{where}: Include: '~' in a system config file")
            if not pattern.startswith(("/", "~")):
                # Relative: under ~/.ssh for a user's file, /etc/ssh for the system's.
                pattern = f"{'/etc/ssh' if system else '~/.ssh'}/{pattern}"
            try:
                pattern = expand_tilde(pattern, self.home)
            except ValueError as exc:
                raise SshConfigError(f"{where}: Include: {exc}") from None
            # glob(3) sorts its matches; with first-value-wins the order decides.
            paths.extend(path for path in sorted(glob.glob(pattern)) if os.path.isfile(path))
        return paths


def _apply(settings: _Settings, keyword: str, args: Sequence[str]) -> None:
    value = args[0]
    # ProxyJump and ProxyCommand share one slot: whichever comes first wins.
    no_proxy = settings.proxy_jump is None and settings.proxy_command is None
    if keyword == "hostname" and settings.hostname is None:
        settings.hostname = value
    elif keyword == "port" and settings.port is None:
        settings.port = int(value)
    elif keyword == "user" and settings.user is None:
        settings.user = value
    elif keyword == "identityfile" and value not in settings.identity_files:
        settings.identity_files.append(value)
    elif keyword == "proxyjump" and no_proxy:
        settings.proxy_jump = value
    elif (
        keyword == "proxycommand" and settings.proxy_jump is None and settings.proxy_command is None
    ):
        settings.proxy_command = " ".join(args)
    elif keyword == "userknownhostsfile" and settings.user_known_hosts is None:
        settings.user_known_hosts = list(args)
    elif keyword == "globalknownhostsfile" and settings.global_known_hosts is None:
        settings.global_known_hosts = list(args)
    elif keyword == "hostkeyalias" and settings.host_key_alias is None:
        settings.host_key_alias = value


def _check_syntax(keyword: str, args: list[str], where: str) -> None:
    value = args[0]
    if keyword == "port" and not (value.isdigit() and 0 < int(value) <= 65535):
        raise SshConfigError(f"{where}: Port: expected a number from 1 to 65535, got {value!r}")
    if keyword == "proxyjump":
        try:
            parse_jump_chain(value)
        except ValueError as exc:
            raise SshConfigError(f"{where}: ProxyJump: {exc}") from None


@functools.cache
def current_user() -> str:
    """The login of this process (asked once: without USER or LOGNAME in the
    environment each call reads the password database, ~0.25 ms a node at start-up)."""
    return getpass.getuser()


def resolve_host(
    config_files: Sequence[str],
    host: str,
    *,
    user: str | None = None,
    port: int | None = None,
    home: str | None = None,
    local_user: str | None = None,
    system_files: Sequence[str] = (),
) -> HostConfig:
    """Resolve ``host`` through ``config_files`` as ``ssh -F <file> [-l user] [-p port]`` would.

    Args:
        config_files: client config files read in order (missing ones are an error,
            as ``ssh -F``); relative ``Include`` paths are under ``home``/.ssh.
        host: the name asked for; ``Host`` patterns match it as given.
        user: a login name that overrides ``User`` (``ssh -l``).
        port: a port that overrides ``Port`` (``ssh -p``).
        home: the home directory for ``~`` and ``%d``; the current user's by default.
        local_user: ``%u`` and the default login; the current user by default.
        system_files: system-wide config files read after ``config_files``
            (``/etc/ssh/ssh_config``); their relative ``Include`` paths are under /etc/ssh.

    Raises:
        SshConfigError: a line OpenSSH would refuse, with its file and line number.
    """
    home = os.path.expanduser("~") if home is None else home
    local_user = current_user() if local_user is None else local_user
    settings = _Settings(user=user, port=port)
    reader = _Reader(host, home, local_user, settings)
    for path in config_files:
        reader.read_file(path, True, depth=0, included=False, system=False)
    for path in system_files:
        reader.read_file(path, True, depth=0, included=False, system=True)
    return _finish(settings, host, home, local_user)


def _finish(settings: _Settings, host: str, home: str, local_user: str) -> HostConfig:
    hostname = resolve_hostname(settings.hostname, host)
    port = settings.port or DEFAULT_PORT
    user = settings.user or local_user
    tokens = host_tokens(
        host=host, hostname=hostname, port=port, user=user, home=home, local_user=local_user,
        alias=settings.host_key_alias or host, local_host=socket.gethostname(),
    )  # fmt: skip
    configured = bool(settings.identity_files)
    # "IdentityFile none" counts as configured (no default keys) but names no file.
    identity = [path for path in settings.identity_files if path.lower() != "none"]
    identity = identity if configured else list(DEFAULT_IDENTITY_FILES)
    user_known = settings.user_known_hosts or list(DEFAULT_USER_KNOWN_HOSTS)
    if [name.lower() for name in user_known] == ["none"]:
        user_known = []
    return HostConfig(
        host=host,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=expand_path_list(identity, tokens, home, "IdentityFile"),
        proxy_jump=parse_jump_chain(settings.proxy_jump) if settings.proxy_jump else (),
        proxy_command=settings.proxy_command,
        user_known_hosts=expand_path_list(user_known, tokens, home, "UserKnownHostsFile"),
        global_known_hosts=tuple(settings.global_known_hosts or DEFAULT_GLOBAL_KNOWN_HOSTS),
    )
