"""[contract] renter identity and [jobs] settings reach the agent's command line."""

from __future__ import annotations

import argparse
import hashlib
import shlex
from pathlib import Path

from collectors.agent.cli import Options, parse_args
from collectors.ssh import agent_command
from gpufleet.config import parse_config
from gpufleet.session import load_fleet
from gpufleet.targets import targets_from_config


def _agent_options(raw: dict[str, object]) -> Options:
    """The options the agent parses from the controller's command line for ``raw``."""
    config = parse_config(raw)
    (target,) = targets_from_config(config.fleet, contract=config.contract, jobs=config.jobs)
    digest = hashlib.sha256(b"agent").hexdigest()
    words = shlex.split(agent_command(target, "agent-x.pyz", digest))
    return parse_args(words[words.index(digest) + 1 :])


def test_renter_users_and_processes_and_jobs_off_reach_the_agent() -> None:
    options = _agent_options(
        {
            "fleet": {"hosts": ["gpu-01"]},
            "contract": {"renter_users": ["alice", "svc@lab"], "renter_processes": ["py thon"]},
            "jobs": {"enabled": False},
        }
    )
    assert options.renter_users == ["alice", "svc@lab"]
    assert options.renter_processes == ["py thon"]
    assert options.jobs is False


def test_jobs_refresh_reaches_the_agent() -> None:
    options = _agent_options({"fleet": {"hosts": ["gpu-01"]}, "jobs": {"refresh_s": 45}})
    assert (options.jobs, options.jobs_refresh) == (True, 45.0)
    assert options.renter_users == []


def test_without_the_sections_the_command_line_is_unchanged() -> None:
    fleet = parse_config({"fleet": {"hosts": ["gpu-01"]}}).fleet
    (target,) = targets_from_config(fleet)
    assert target.agent_args == ()


def test_a_config_file_s_contract_reaches_every_target_the_commands_load(tmp_path: Path) -> None:
    config = tmp_path / "fleet.toml"
    config.write_text(
        '[fleet]\nhosts = ["gpu-01", "gpu-02"]\n'
        '[contract]\nrenter_users = ["alice"]\n'
        "[jobs]\nrefresh_s = 45\n"
    )
    _, targets, _ = load_fleet(argparse.Namespace(config=config))
    for target in targets:
        words = list(target.agent_args)
        assert words[words.index("--renter-user") + 1] == "alice"
        assert words[words.index("--jobs-refresh") + 1] == "45.0"
