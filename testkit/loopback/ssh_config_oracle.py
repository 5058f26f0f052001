"""``ssh -G`` as the oracle for ssh config resolution: a corpus, OpenSSH's view and ours.

A corpus directory holds client configs whose ``# case:`` lines name the hosts to
resolve. Both views are dictionaries over :data:`FIELDS` with comparable values, so a
test or a bench compares them field by field. OpenSSH runs with ``HOME`` pointed at
the corpus's temporary home (``-F`` already keeps the user's own config out) and
``LC_ALL=C``. Test support: used by tests and bench, never by the product.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from collectors.ssh.config_syntax import SshConfigError
from collectors.ssh.openssh_config import resolve_host

SSH = "ssh"
FIELDS: tuple[str, ...] = (
    "hostname",
    "port",
    "user",
    "identityfile",
    "proxyjump",
    "userknownhostsfile",
    "globalknownhostsfile",
)
View = dict[str, str | tuple[str, ...]]
# Every field of a case whose config is refused (ssh exits non-zero, gpufleet raises).
REFUSED = "refused"

_CASE = re.compile(r"^#\s*case:\s*(.+?)\s*$")
_IDENTITY = re.compile(r"^debug1: identity file (.+) type -?\d+$")


@dataclass(frozen=True, slots=True)
class ConfigCase:
    """One ``ssh -F config [-l user] [-p port] host`` to resolve."""

    config: Path
    host: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        """``file:host`` with the command-line overrides, for test ids and reports."""
        extra = "".join(
            f" {flag}={value}"
            for flag, value in (("user", self.user), ("port", self.port))
            if value is not None
        )
        return f"{self.config.name}:{self.host}{extra}"


def install_corpus(source: Path, home: Path) -> list[ConfigCase]:
    """Copy the corpus to ``home/.ssh`` and list its cases there."""
    ssh_dir = home / ".ssh"
    shutil.copytree(source, ssh_dir, dirs_exist_ok=True)
    return corpus_cases(ssh_dir)


def corpus_cases(directory: Path) -> list[ConfigCase]:
    """The ``# case:`` lines of every ``*.conf`` in ``directory``, file by file in name order."""
    cases = []
    for config in sorted(directory.glob("*.conf")):
        for line in config.read_text(encoding="utf-8").splitlines():
            found = _CASE.match(line)
            if found:
                cases.append(_parse_case(config, found.group(1)))
    return cases


def _parse_case(config: Path, text: str) -> ConfigCase:
    words = text.split(" ")
    options = dict(word.split("=", 1) for word in words if "=" in word)
    host = " ".join(word for word in words if "=" not in word)
    port = options.get("port")
    return ConfigCase(config, host, options.get("user"), int(port) if port else None)


def local_account() -> tuple[str, str]:
    """The login name and home directory of the passwd entry (what OpenSSH uses)."""
    entry = pwd.getpwuid(os.getuid())
    return entry.pw_name, entry.pw_dir


def gpufleet_view(case: ConfigCase, home: Path) -> View:
    """What gpufleet resolves for ``case``, or every field ``error: ...`` when it refuses."""
    try:
        resolved = resolve_host(
            [str(case.config)], case.host, user=case.user, port=case.port,
            home=str(home), local_user=local_account()[0],
        )  # fmt: skip
    except SshConfigError:
        return dict.fromkeys(FIELDS, REFUSED)
    return {
        "hostname": resolved.hostname,
        "port": str(resolved.port),
        "user": resolved.user,
        "identityfile": resolved.identity_files,
        "proxyjump": ",".join(str(hop) for hop in resolved.proxy_jump) or "none",
        "userknownhostsfile": resolved.user_known_hosts,
        "globalknownhostsfile": resolved.global_known_hosts,
    }


def openssh_view(case: ConfigCase, home: Path) -> View:
    """What ``ssh -G`` (and ``ssh -v`` for the expanded identity files) says for ``case``."""
    dump = _ssh_g(case, home)
    if dump is None:
        return dict.fromkeys(FIELDS, REFUSED)
    at_home = _home_mapper(home)
    known = tuple(at_home(path) for path in dump.get("userknownhostsfile", ()))
    return {
        "hostname": dump["hostname"][0],
        "port": dump["port"][0],
        "user": " ".join(dump["user"]),
        "identityfile": tuple(at_home(path) for path in _identity_files(case, home)),
        "proxyjump": _openssh_chain(" ".join(dump["proxyjump"]), home)
        if "proxyjump" in dump
        else "none",
        "userknownhostsfile": () if known == ("none",) else known,
        "globalknownhostsfile": tuple(dump.get("globalknownhostsfile", ())),
    }


def _ssh_args(case: ConfigCase) -> list[str]:
    args = ["-F", str(case.config)]
    if case.user is not None:
        args += ["-l", case.user]
    if case.port is not None:
        args += ["-p", str(case.port)]
    return args


def _run_ssh(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C"}
    return subprocess.run(
        [SSH, *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def _ssh_g(case: ConfigCase, home: Path) -> dict[str, list[str]] | None:
    """``ssh -G`` output by keyword; ``None`` when ssh refuses the config."""
    done = _run_ssh(["-G", *_ssh_args(case), case.host], home)
    if done.returncode != 0:
        return None
    dump: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "identityfile":
            dump.setdefault(key, []).append(value)
        else:
            dump[key] = value.split(" ")
    return dump


def _identity_files(case: ConfigCase, home: Path) -> list[str]:
    """The identity files ``ssh`` tries, expanded: ``ssh -G`` prints them unexpanded.

    ``ssh -v`` logs each file (and its ``-cert`` companion) as it loads them, before
    it connects; ``ProxyCommand=false`` ends the attempt there without a network.
    """
    args = ["-v", *_ssh_args(case), "-o", "ProxyCommand=false", "-o", "BatchMode=yes"]
    done = _run_ssh([*args, case.host], home)
    files: list[str] = []
    for line in done.stderr.splitlines():
        found = _IDENTITY.match(line)
        if found and not (files and found.group(1) == files[-1] + "-cert"):
            files.append(found.group(1))
    return files


def _openssh_chain(spec: str, home: Path) -> str:
    """Every hop of a ProxyJump chain as OpenSSH parses it.

    ``ssh -G`` normalises only the last hop (the rest is passed on verbatim to the
    ssh that reaches it), so the chain is peeled one hop per ``ssh -G -J`` run.
    """
    hops: list[str] = []
    while spec:
        done = _run_ssh(["-G", "-F", "/dev/null", "-J", spec, "oracle-target"], home)
        if done.returncode != 0:
            return REFUSED
        line = next(line for line in done.stdout.splitlines() if line.startswith("proxyjump "))
        rest, _, last = line.removeprefix("proxyjump ").rpartition(",")
        hops.insert(0, last)
        spec = rest
    return ",".join(hops)


def _home_mapper(home: Path) -> Callable[[str], str]:
    """OpenSSH expands ``~`` and ``%d`` from the passwd entry, ``Include`` globs from $HOME.

    gpufleet takes one home for both (``$HOME``); mapping the passwd home onto the
    test's home makes the two comparable without reading the real one.
    """
    real = local_account()[1].rstrip("/") + "/"

    def at_home(path: str) -> str:
        return str(home) + "/" + path[len(real) :] if path.startswith(real) else path

    return at_home


def compare(ours: View, theirs: View) -> list[str]:
    """The fields where two views differ, each with both values."""
    return [
        f"{field}: resolved {ours[field]!r}, ssh {theirs[field]!r}"
        for field in FIELDS
        if ours[field] != theirs[field]
    ]
