"""Bad or careless input: one line naming the file and key, no traceback, no leftovers.

Cases run the real command line, ``gpufleet.cli.main``, in this process (an escaping
exception fails the test) with its own temporary directory; one runs
``python -m gpufleet`` in a subprocess to show the whole process behaves the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from collectors.inventory import InventoryError, expand_hosts, host_count_bound
from gpufleet.cli import main
from gpufleet.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def gpufleet(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "gpufleet", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> object:
    """``gpufleet ARGS`` in this process: returns its one stderr line (exit status 2)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("HOME", str(tmp_path))

    def run(*args: str) -> str:
        status = main(list(args))
        err = capsys.readouterr().err
        return one_line_error(subprocess.CompletedProcess(args, status, "", err))

    return run


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (b'[fleet]\nhosts = ["gpu-[1-10000000]"]\n', "10,000,000 hosts"),
        (b'[fleet]\nhosts = ["r[1-3000]-n[1-3000]"]\n', "9,000,000 hosts"),
        (b'[fleet]\nmax_hosts = 10\nhosts = ["gpu-[1-8]", "cpu-[1-8]"]\n', "at most 10"),
        (b'[fleet]\nhosts = ["a"]\nhostfile = "/dev/zero"\n', "hostfile larger than"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper"),
        (b"x = {" * 200 + b"}" * 200 + b"\n", "nested deeper"),
        (b'[fleet]\nhosts = ["a"]\nuser = "caf\xe9"\n', "not UTF-8"),
    ],
    ids=["huge-range", "huge-2d", "cap", "hostfile-dev-zero", "nested", "nested-inline", "latin1"],
)
def test_bad_configs_fail_in_one_line(tmp_path: Path, cli: Any, toml: bytes, expected: str) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(toml)
    line = cli("check", "-c", str(config))
    assert expected in line and str(config) in line


def test_dev_zero_as_the_config_is_refused_at_once(tmp_path: Path) -> None:
    line = one_line_error(gpufleet(tmp_path, "check", "-c", "/dev/zero"))
    assert line == "gpufleet: /dev/zero: the configuration is larger than the 1 MiB cap"


def test_the_host_cap_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[fleet]\nhosts = ["gpu-[1-10000000]"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert f"{config}: key 'fleet.hosts.0'" in str(caught.value)
    assert "max_hosts" in str(caught.value)


def test_max_hosts_raises_the_cap(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[fleet]\nmax_hosts = 30000\nhosts = ["gpu-[1-25000]"]\n')
    assert load_config(config).fleet.max_hosts == 30000


def test_hostfile_entries_count_towards_the_cap(tmp_path: Path, cli: Any) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("gpu-[1-8]\ncpu-[1-8]\n")
    config = tmp_path / "config.toml"
    config.write_text('[fleet]\nmax_hosts = 12\nhosts = ["a"]\nhostfile = "hosts"\n')
    line = cli("check", "-c", str(config))
    assert "key 'fleet.hostfile'" in line and "at most 12" in line


def test_counting_is_exact_for_unions_and_bounds_the_rest() -> None:
    assert host_count_bound("gpu-[001-128],cpu-[1-4]") == 132
    assert host_count_bound("a[1-3,5,7-9/2]b[1-2]") == 12
    assert host_count_bound("gpu-[1-10]!gpu-[3-4]") >= len(expand_hosts(["gpu-[1-10]!gpu-[3-4]"]))
    with pytest.raises(InventoryError, match="at most 5"):
        expand_hosts(["gpu-[1-3]", "cpu-[1-3]"], limit=5)


def test_a_bad_scenario_fails_in_one_line_and_leaves_nothing(tmp_path: Path, cli: Any) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text('[[fault]]\nkind = "no_such_fault"\nnode = "node-001"\n')
    line = cli("demo", "--headless", "--scenario", str(scenario))
    assert str(scenario) in line and "no_such_fault" in line
    assert list((tmp_path / "tmp").iterdir()) == []


def test_dev_zero_as_the_scenario_is_refused(tmp_path: Path, cli: Any) -> None:
    line = cli("demo", "--headless", "--scenario", "/dev/zero")
    assert "larger than" in line
    assert list((tmp_path / "tmp").iterdir()) == []
