"""[fleet]: hosts, hostfile, overrides and the error messages a bad file gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.ssh import KnownHostsDefault
from gpufleet.config import ConfigError, load_config, parse_config
from gpufleet.targets import options_from_config, targets_from_config


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_need_nothing_but_hosts() -> None:
    fleet = parse_config({"fleet": {"hosts": ["gpu-[01-02]"]}}).fleet
    targets = targets_from_config(fleet)
    assert [t.name for t in targets] == ["gpu-01", "gpu-02"]
    first = targets[0]
    assert (first.host, first.port, first.user, first.identity_files) == ("gpu-01", None, None, ())
    assert first.known_hosts is KnownHostsDefault.SSH_CONFIG  # ~/.ssh/config decides
    assert (first.python, first.expected_gpus, first.interval) == ("python3", 8, 1.0)
    assert first.host_key_policy == "strict"
    assert first.remote_cache_dir == "~/.cache/gpufleet"
    options = options_from_config(fleet)
    assert (options.keepalive_interval, options.keepalive_count_max) == (5.0, 3)
    assert (options.max_concurrent_connects, options.backoff_cap) == (64, 60.0)


def test_overrides_apply_to_matching_hosts_in_file_order(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "c.toml",
        """
[fleet]
hosts = ["gpu-[001-004]", "10.0.0.9"]
user = "ops"
port = 22
identity_file = "/keys/fleet"
known_hosts = "/etc/gpufleet/known_hosts"
host_key_policy = "accept-new"

[fleet.overrides."gpu-[003-004]"]
port = 2222
python = "/opt/py/bin/python3"

[fleet.overrides."gpu-004"]
user = "root"
expected_gpus = 4
""",
    )
    targets = {t.name: t for t in targets_from_config(load_config(config).fleet)}
    assert list(targets) == ["gpu-001", "gpu-002", "gpu-003", "gpu-004", "10.0.0.9"]
    assert (targets["gpu-001"].port, targets["gpu-001"].user) == (22, "ops")
    assert (targets["gpu-003"].port, targets["gpu-003"].python) == (2222, "/opt/py/bin/python3")
    gpu4 = targets["gpu-004"]
    assert (gpu4.port, gpu4.user, gpu4.expected_gpus) == (2222, "root", 4)
    assert gpu4.identity_files == ("/keys/fleet",)
    assert gpu4.known_hosts == "/etc/gpufleet/known_hosts"
    assert gpu4.host_key_policy == "accept-new"


def test_hostfile_adds_hosts_relative_to_the_config(tmp_path: Path) -> None:
    _write(tmp_path / "nodes.txt", "# rack 7\n\nrack7-[1-3]   # three nodes\ngpu-001\n")
    config = _write(
        tmp_path / "c.toml", '[fleet]\nhosts = ["gpu-001", "gpu-002"]\nhostfile = "nodes.txt"\n'
    )
    fleet = load_config(config).fleet
    names = [t.name for t in targets_from_config(fleet, base_dir=tmp_path)]
    assert names == ["gpu-001", "gpu-002", "rack7-1", "rack7-2", "rack7-3"]


@pytest.mark.parametrize(
    ("fleet_toml", "expected"),
    [
        ('hosts = ["gpu 01"]', "key 'fleet.hosts.0': Value error, 'gpu 01' is not a hostname"),
        ('hosts = ["a;reboot"]', "key 'fleet.hosts.0': Value error, 'a;reboot' is not a hostname"),
        (
            'hosts = ["gpu-[001-"]',
            "key 'fleet.hosts.0': Value error, 'gpu-[001-' is not a hostlist",
        ),
        ('hosts = ["ok", "-bad"]', "key 'fleet.hosts.1': Value error, '-bad' is not a hostname"),
        ("port = 70000", "key 'fleet.port': Input should be less than or equal to 65535"),
        ('host_key_policy = "no"', "key 'fleet.host_key_policy': Input should be 'strict' or"),
        ("keepalive_interval = 0", "key 'fleet.keepalive_interval': Input should be greater than"),
        ('remote_cache_dir = "~bob/x"', "key 'fleet.remote_cache_dir': Value error, must be"),
        ("hots = []", "unknown key 'fleet.hots'"),
        ('jump_host = "ops@bastion;id"', "key 'fleet.jump_host': Value error, 'bastion;id' is not"),
        (
            'jump_host = "ops@b1:99999"',
            "key 'fleet.jump_host': Value error, jump host 'ops@b1:99999'",
        ),
        ('[fleet.overrides."x y"]', "key 'fleet.overrides': Value error, override key 'x y'"),
        ('[fleet.overrides."a"]\nprot = 1', "unknown key 'fleet.overrides.a.prot'"),
    ],
)
def test_bad_values_name_file_key_and_value(tmp_path: Path, fleet_toml: str, expected: str) -> None:
    config = _write(tmp_path / "bad.toml", f"[fleet]\n{fleet_toml}\n")
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert str(error.value).startswith(f"{config}: ")
    assert expected in str(error.value)


def test_jump_host_chains_are_accepted() -> None:
    spec = "ops@bastion-1.example.com:2222,10.0.0.1,jump@inner"
    assert parse_config({"fleet": {"jump_host": spec}}).fleet.jump_host == spec


def test_value_shown_in_the_message(tmp_path: Path) -> None:
    config = _write(tmp_path / "bad.toml", "[fleet]\nport = 70000\n")
    with pytest.raises(ConfigError, match=r"\(got 70000\)$"):
        load_config(config)


def test_override_matching_no_host_is_an_error(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "c.toml", '[fleet]\nhosts = ["gpu-001"]\n[fleet.overrides."gpu-009"]\nport = 2\n'
    )
    with pytest.raises(ConfigError) as error:
        targets_from_config(load_config(config).fleet, source=str(config))
    assert str(error.value) == (
        f"{config}: key 'fleet.overrides.\"gpu-009\"': matches no host of the fleet"
    )


def test_bad_hostfile_line_names_file_and_line(tmp_path: Path) -> None:
    _write(tmp_path / "nodes.txt", "gpu-001\n\ngpu_002\n")
    config = _write(tmp_path / "c.toml", '[fleet]\nhostfile = "nodes.txt"\n')
    with pytest.raises(ConfigError) as error:
        targets_from_config(load_config(config).fleet, base_dir=tmp_path, source=str(config))
    message = str(error.value)
    assert message.startswith(f"{config}: key 'fleet.hostfile': {tmp_path / 'nodes.txt'}:3: ")
    assert "'gpu_002' is not a hostname" in message


def test_missing_hostfile(tmp_path: Path) -> None:
    config = _write(tmp_path / "c.toml", '[fleet]\nhostfile = "absent.txt"\n')
    with pytest.raises(ConfigError, match="cannot read the hostfile: No such file"):
        targets_from_config(load_config(config).fleet, base_dir=tmp_path, source=str(config))
