"""``gpufleet init``, ``gpufleet help`` and the no-config error that points at both."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.commands.init import starter_config
from gpufleet.config import Config, load_config, parse_config


def test_init_writes_a_config_for_the_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conf" / "gpufleet.toml"
    assert main(["init", "gpu-[001-004]", "10.0.0.7", "-o", str(path)]) == 0
    config = load_config(path)
    assert config.fleet.hosts == ["gpu-[001-004]", "10.0.0.7"]
    assert config.model_dump(exclude={"fleet"}) == Config().model_dump(exclude={"fleet"})
    printed = capsys.readouterr().out
    assert f"check -c {path}" in printed  # the next step, runnable as printed
    text = path.read_text()
    assert "# Seconds between samples." in text  # the field docs, as comments
    assert "# [sla]" in text and "# committed_nodes = ...  # required" in text


def test_every_default_shown_is_the_real_default() -> None:
    text = starter_config(["n1"])
    in_optional_table = False
    lines = []
    for line in text.splitlines():
        if re.fullmatch(r"#? ?\[\w+\]", line):
            in_optional_table = line.startswith("#")
        elif not in_optional_table and re.match(r"# \w+ = ", line) and "..." not in line:
            line = line[2:]  # uncomment: `key = default`
        lines.append(line)
    uncommented = "\n".join(lines)
    assert uncommented.count("\ninterval = 1.0") == 1
    assert parse_config(tomllib.loads(uncommented)) == parse_config({"fleet": {"hosts": ["n1"]}})


def test_init_keeps_an_existing_file_and_refuses_bad_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("# mine\n")
    assert main(["init", "n1", "-o", str(path)]) == 2
    assert path.read_text() == "# mine\n"
    assert "--force" in capsys.readouterr().err
    assert main(["init", "n1", "-o", str(path), "--force"]) == 0
    assert load_config(path).fleet.hosts == ["n1"]
    fresh = tmp_path / "other.toml"
    assert main(["init", "bad host;rm", "-o", str(fresh)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpufleet: init:") and "fleet.hosts" in err and err.count("\n") == 1
    assert not fresh.exists()


def test_help_prints_the_shipped_docs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help"]) == 0
    assert "  config\n" in capsys.readouterr().out
    assert main(["help", "config"]) == 0
    out = capsys.readouterr().out
    assert out == (Path(__file__).parents[2] / "docs" / "config.md").read_text()
    assert main(["help", "nope"]) == 2


def test_no_config_points_at_init_and_help_runnable_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "docs/config.md" not in err
    init, help_ = re.findall(r"`([^`]+)`", err)
    assert init.endswith(" init HOST ...")
    config = tmp_path / "written.toml"
    run = subprocess.run(  # the printed commands, pasted into a shell
        f"{init.removesuffix(' HOST ...')} gpu-1 -o {config} && {help_}",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert load_config(config).fleet.hosts == ["gpu-1"]
    assert "## [metrics]" in run.stdout


@pytest.mark.parametrize(
    "command",
    [["check"], ["watch"], ["serve"], ["sla"], ["export", "--since", "1d", "-o", "out.csv"]],
)
def test_a_missing_dash_c_file_points_at_init_and_help_runnable_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    config = tmp_path / "my fleet" / "gpufleet.toml"  # a space: the printed path is quoted
    assert main([*command, "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{config}: no configuration file; write one with `" in err
    assert "pass -c FILE" not in err  # it was passed
    init, help_ = re.findall(r"`([^`]+)`", err)
    assert init.endswith(" HOST ...")
    run = subprocess.run(  # the printed commands, pasted into a shell, hosts filled in
        f"{init.removesuffix(' HOST ...')} gpu-[001-002] && {help_}",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert load_config(config).fleet.hosts == ["gpu-[001-002]"]  # written where -c looked
    assert "## [metrics]" in run.stdout
