"""Hosts with no ssh config file share one asyncssh options object (collectors/ssh/options.py).

Without a file nothing in the options depends on the host name, so a 1,000-node fleet
built 1,000 equal objects at start-up (~0.3 s). ``asyncssh.connect`` builds each
connection's own options from them with the node's HostName.
"""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from collectors.ssh import SshOptions

NAMES = [f"gpu-{i:03d}.cluster.example" for i in range(50)]


@pytest.fixture(autouse=True)
def _empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/config to read


def test_hosts_without_an_ssh_config_share_one_options_object() -> None:
    options = SshOptions()
    built = {id(options.host_options(name)) for name in NAMES}
    assert len(built) == 1


def test_each_connection_still_gets_its_own_host() -> None:
    options = SshOptions()
    for name in NAMES[:3]:
        resolved = options.resolved(name)
        # What asyncssh.connect does with the options it is given (connection.py: construct).
        own = asyncssh.SSHClientConnectionOptions(
            options.host_options(name), config=None, host=resolved.hostname, port=resolved.port
        )
        assert own.host == name


def test_another_user_or_port_has_options_of_its_own() -> None:
    options = SshOptions()
    default = options.host_options(NAMES[0])
    assert options.host_options(NAMES[1], user="ops") is not default
    assert options.host_options(NAMES[1], port=2222) is not default
    assert options.host_options(NAMES[1], user="ops").username == "ops"
    assert options.host_options(NAMES[2], port=2222).port == 2222


def test_with_an_ssh_config_file_each_host_has_its_own(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host gpu-000*\n  Compression yes\n", encoding="utf-8")
    options = SshOptions(ssh_config=(str(config),))
    assert options.host_options(NAMES[0]) is not options.host_options(NAMES[1])
