"""What gpufleet tells a pip-installed user to read exists in the installed package.

A wheel has no ``docs/`` tree: help texts, errors and panels name ``gpufleet help
TOPIC`` (printed as the running executable), and the shipped non-Markdown files (the
Grafana dashboard, the systemd unit) come out through ``gpufleet help FILE``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from gpufleet.cli import COMMANDS, build_parser, main
from gpufleet.config import parse_config
from gpufleet.docs import shipped_files, topics
from tui.panels import sla_markup

ROOT = Path(__file__).resolve().parents[2]
HELP_REFERENCE = re.compile(r"gpufleet help ([\w./-]+)")


def help_text(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return out.getvalue()


def test_help_lists_and_prints_the_files_an_operator_installs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["help"]) == 0
    listing = capsys.readouterr().out
    assert "  grafana/gpufleet.json\n" in listing and "  gpufleet.service\n" in listing
    assert main(["help", "grafana/gpufleet.json"]) == 0
    printed = capsys.readouterr().out
    assert printed == (ROOT / "docs" / "grafana" / "gpufleet.json").read_text()
    assert json.loads(printed)["panels"]
    assert main(["help", "gpufleet.service"]) == 0
    assert "ExecStart=" in capsys.readouterr().out


@pytest.mark.parametrize("topic", ["../pyproject.toml", "grafana/../config.md", "/etc/passwd"])
def test_help_prints_only_listed_files(topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", topic]) == 2
    assert "no topic" in capsys.readouterr().err


@pytest.mark.parametrize("command", [c.__name__.rsplit(".", 1)[1] for c in COMMANDS])
def test_help_texts_point_at_installed_docs_runnable_as_printed(
    command: str, tmp_path: Path
) -> None:
    text = " ".join(help_text(command).split())  # argparse wraps lines anywhere
    assert "docs/" not in text
    for printed in re.findall(r"`([^`]*gpufleet help [^`]+)`", text):
        run = subprocess.run(
            printed, shell=True, capture_output=True, text=True, check=False, cwd=tmp_path
        )
        assert run.returncode == 0 and run.stdout.startswith("#"), (printed, run.stderr)


def test_the_sla_panel_without_a_contract_points_at_installed_docs() -> None:
    text = sla_markup(None)
    assert "docs/" not in text
    assert [ref.rstrip(".") for ref in HELP_REFERENCE.findall(text)] == ["sla"]


def test_every_help_reference_in_the_docs_names_a_shipped_topic_or_file() -> None:
    known = set(topics()) | set(shipped_files())
    sources = [ROOT / "README.md", ROOT / "docs" / "gpufleet.service"]
    sources += sorted((ROOT / "docs").glob("*.md"))
    found = {
        ref.rstrip(".`")
        for source in sources
        for ref in HELP_REFERENCE.findall(source.read_text(encoding="utf-8"))
    }
    assert {"config", "grafana/gpufleet.json", "gpufleet.service"} <= found
    assert found - {"TOPIC", "FILE"} <= known, found - known


def readme_gpufleet_commands() -> list[list[str]]:
    """Every ``gpufleet ...`` line of the README's sh blocks, as argv after the program."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    commands = []
    for line in "\n".join(blocks).splitlines():
        words = shlex.split(line, comments=True)
        if words and Path(words[0]).name == "gpufleet":
            commands.append(words[1:])
    return commands


def test_every_readme_command_is_accepted_by_the_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands = readme_gpufleet_commands()
    assert len(commands) >= 10
    assert {c[0] for c in commands} >= {"demo", "init", "check", "watch", "serve", "sla"}
    for argv in commands:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"README: gpufleet {' '.join(argv)}: {capsys.readouterr().err}")


def test_the_readme_config_example_is_a_valid_config() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    for block in blocks:
        config = parse_config(tomllib.loads(block), source="README.md")
        assert config.fleet.hosts


def test_sla_without_a_contract_points_at_the_keys_runnable_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    assert main(["init", "gpu-1", "-o", str(config)]) == 0  # [sla] is commented out
    capsys.readouterr()
    assert main(["sla", "-c", str(config), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no [sla] table" in err
    (printed,) = re.findall(r"`([^`]+)`", err)
    run = subprocess.run(printed, shell=True, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "## [sla]" in run.stdout, run.stderr
