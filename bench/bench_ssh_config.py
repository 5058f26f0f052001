"""ssh config fidelity: how many per-host options agree with ``ssh -G`` (OpenSSH).

Runs the corpus of ``tests/ssh/openssh_corpus`` (every ``# case:``, seven fields each:
HostName, Port, User, identity files, ProxyJump hops, UserKnownHostsFile,
GlobalKnownHostsFile) through

  1. gpufleet's resolution (``collectors.ssh.openssh_config``), and
  2. the baseline: asyncssh's ``SSHClientConfig`` as gpufleet read it before its own
     resolver (``Host``/``Match``/``Include`` by asyncssh; ProxyJump split at the last
     ``@`` and ``:``; known_hosts from asyncssh's ``UserKnownHostsFile`` with only
     ``~`` expanded, else ``~/.ssh/known_hosts``, and no global file unless set),

and compares both with OpenSSH's answer in the same run. Prints the agreement of
each, the fields that differ, and the cases where asyncssh could not even build the
connection options (an ``IdentityFile`` that does not exist raises).

    PYTHONPATH=. .venv/bin/python bench/bench_ssh_config.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import asyncssh
from asyncssh.config import SSHClientConfig

from testkit.loopback.ssh_config_oracle import (
    FIELDS,
    REFUSED,
    ConfigCase,
    View,
    compare,
    gpufleet_view,
    install_corpus,
    local_account,
    openssh_view,
)

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "ssh" / "openssh_corpus"
# asyncssh's default key names, in the order it tries them (asyncssh.public_key).
_ASYNCSSH_DEFAULT_KEYS = ("id_ed25519_sk", "id_ecdsa_sk", "id_ed448", "id_ed25519", "id_ecdsa")
_ASYNCSSH_DEFAULT_KEYS += ("id_rsa", "id_dsa")


def asyncssh_view(case: ConfigCase, home: Path) -> View:
    """The seven fields as gpufleet derived them from asyncssh's config reading before."""
    local_user = local_account()[0]
    try:
        config = SSHClientConfig.load(
            None, [str(case.config)], False, False, False, local_user,
            case.user if case.user is not None else (), case.host,
            case.port if case.port is not None else (),
        )  # fmt: skip
    except (ValueError, OSError):
        return dict.fromkeys(FIELDS, REFUSED)
    user_files, global_files = _old_known_hosts(config)
    identity = config.get("IdentityFile")
    return {
        "hostname": str(config.get("Hostname", case.host)),
        "port": str(config.get("Port", 22)),
        "user": str(config.get("User", local_user)),
        "identityfile": tuple(os.path.expanduser(str(path)) for path in identity)
        if isinstance(identity, list)
        else tuple(str(home / ".ssh" / name) for name in _ASYNCSSH_DEFAULT_KEYS),
        "proxyjump": _old_jump_chain(config.get("ProxyJump")),
        "userknownhostsfile": user_files,
        "globalknownhostsfile": global_files,
    }


def _old_known_hosts(config: SSHClientConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    user = config.get("UserKnownHostsFile", ())
    global_ = config.get("GlobalKnownHostsFile", [])
    assert isinstance(user, list | tuple) and isinstance(global_, list)
    default = (os.path.expanduser("~/.ssh/known_hosts"),)
    if user == [] or not (list(user) + global_):  # 'none', or nothing set
        return default, ()
    return tuple(os.path.expanduser(p) for p in user), tuple(os.path.expanduser(p) for p in global_)


def _old_jump_chain(spec: object) -> str:
    if not isinstance(spec, str) or spec.lower() == "none":
        return "none"
    hops = []
    for hop in spec.split(","):
        user, _, address = hop.rpartition("@")
        host, _, port = address.rpartition(":") if ":" in address else (address, "", "")
        if port and not port.isdigit():
            return REFUSED  # int(port) raised
        host = f"[{host}]" if ":" in host else host
        hops.append(f"{user + '@' if user else ''}{host}{':' + port if port else ''}")
    return ",".join(hops)


def options_fail(case: ConfigCase) -> bool:
    """Whether asyncssh raises while building the connection options for ``case``."""
    try:
        asyncssh.SSHClientConnectionOptions(config=[str(case.config)], host=case.host)
    except (OSError, ValueError, asyncssh.KeyImportError):
        return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print every disagreement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        cases = install_corpus(CORPUS, home)
        os.environ["HOME"] = tmp  # asyncssh expands ~ (and relative Include) from $HOME
        ours, baseline, failing = Counter[str](), Counter[str](), 0
        for case in cases:
            truth = openssh_view(case, home)
            for name, view, tally in (
                ("gpufleet", gpufleet_view(case, home), ours),
                ("asyncssh", asyncssh_view(case, home), baseline),
            ):
                for diff in compare(view, truth):
                    tally[diff.partition(":")[0]] += 1
                    if args.show:
                        print(f"  {name} {case.label}: {diff}")
            failing += options_fail(case)
    total = len(cases) * len(FIELDS)
    version = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    print(f"oracle: {version}; {len(cases)} (config, host) cases x {len(FIELDS)} fields")
    for name, tally in (("gpufleet", ours), ("asyncssh baseline", baseline)):
        agree = total - sum(tally.values())
        fields = ", ".join(f"{field} {n}" for field, n in sorted(tally.items())) or "none"
        share = f"{agree}/{total} ({100 * agree / total:.1f} %)"
        print(f"{name:18} agrees on {share}; differ: {fields}")
    print(f"asyncssh cannot build the options (missing IdentityFile): {failing}/{len(cases)} cases")


if __name__ == "__main__":
    main()
