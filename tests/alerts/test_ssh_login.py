"""`S`: the ssh command line for a node, checked against OpenSSH's own reading (ssh -G)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from fleet.ssh_login import ssh_login_argv


def resolved(argv: list[str]) -> dict[str, str]:
    """What ``ssh -G`` makes of the command line (key -> first value)."""
    out = subprocess.run(
        [argv[0], "-G", *argv[1:]], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    config: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        config.setdefault(key, value)
    return config


def identity_files(argv: list[str]) -> list[str]:
    out = subprocess.run(
        [argv[0], "-G", *argv[1:]], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("identityfile ")]


def test_ssh_argv_carries_the_nodes_resolved_options(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    key = tmp_path / "id_ed25519"
    key.write_text("not a key, only a path ssh -G resolves\n", encoding="utf-8")
    target = NodeTarget(
        name="gpu-007",
        host="10.1.2.7",
        port=2222,
        user="ops",
        identity_files=(str(key),),
        jump_host="bastion.example",
        known_hosts=str(known),
    )
    argv = ssh_login_argv(target, SshOptions(ssh_config=None))
    assert argv[-2:] == ["--", "10.1.2.7"]
    config = resolved(argv)
    assert config["hostname"] == "10.1.2.7" and config["port"] == "2222"
    assert config["user"] == "ops" and config["proxyjump"] == "bastion.example"
    assert str(key) in identity_files(argv)
    assert config["userknownhostsfile"].split()[0] == str(known)
    assert config["stricthostkeychecking"] == "true"


def test_accept_new_policy_and_a_hostile_name_stays_one_argument() -> None:
    target = NodeTarget(name="n", host="-oProxyCommand=touch_pwned", host_key_policy="accept-new")
    argv = ssh_login_argv(target, SshOptions(ssh_config=None))
    assert "StrictHostKeyChecking=accept-new" in argv
    # After "--" the host is never read as an option.
    assert argv[argv.index("--") + 1] == "-oProxyCommand=touch_pwned"
