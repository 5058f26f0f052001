"""The agent is trusted by content, not by name: checked on the node before it runs.

Shell nodes run the controller's command under a real ``/bin/sh``, so the hash check
is the bootstrap itself running on the "node", not a stand-in.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from collectors.ssh.fleet import SshFleet
from testkit.loopback.recorder import UpdateRecorder
from tests.hostile.agents import hostile_agent
from tests.hostile.shellnode import ShellFleet, options_with_agent, shell_fleet

NAME = "agent-0123456789ab.pyz"
PLANTED = b"import pathlib\npathlib.Path('pwned').write_text('planted agent ran')\n"


async def _stream_once(fleet: ShellFleet, node: str) -> UpdateRecorder:
    """Run one node until its agent said hello, then stop."""
    recorder = UpdateRecorder()
    target = fleet.target(node, agent_args=("--role", "good"))
    ssh = SshFleet([target], recorder, options_with_agent(hostile_agent(), NAME))
    await ssh.start()
    try:
        await recorder.wait_until(lambda: node in recorder.hellos, 30)
    finally:
        await ssh.stop()
    return recorder


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_planted_agent_is_refused_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with shell_fleet(["n1"], tmp_path) as fleet:
        cache = fleet.nodes["n1"].home / ".cache" / "gpufleet"
        cache.mkdir(parents=True)
        (cache / NAME).write_bytes(PLANTED)
        await _stream_once(fleet, "n1")
        home = fleet.nodes["n1"].home
    assert not (home / "pwned").exists()
    assert (cache / NAME).read_bytes() == hostile_agent()
    assert _mode(cache / NAME) == 0o500 and _mode(cache) == 0o700
    assert any("does not match its SHA-256" in r.getMessage() for r in caplog.records)
    assert not list(cache.glob(".*.part"))


async def test_a_planted_file_of_the_same_size_is_replaced_too(tmp_path: Path) -> None:
    content = hostile_agent()
    same_size = PLANTED + b"#" * (len(content) - len(PLANTED))
    async with shell_fleet(["n1"], tmp_path) as fleet:
        cache = fleet.nodes["n1"].home / ".cache" / "gpufleet"
        cache.mkdir(parents=True, mode=0o755)
        (cache / NAME).write_bytes(same_size)
        await _stream_once(fleet, "n1")
        home = fleet.nodes["n1"].home
    assert not (home / "pwned").exists()
    assert (cache / NAME).read_bytes() == content
    assert _mode(cache) == 0o700  # made private even though it existed before


async def test_nodes_without_sftp_get_the_agent_over_an_exec_channel(tmp_path: Path) -> None:
    async with shell_fleet(["n1"], tmp_path, sftp=False) as fleet:
        recorder = await _stream_once(fleet, "n1")
        node = fleet.nodes["n1"]
    assert recorder.hellos["n1"].host == "good"
    agent = node.home / ".cache" / "gpufleet" / NAME
    assert agent.read_bytes() == hostile_agent()
    assert _mode(agent) == 0o500 and _mode(agent.parent) == 0o700
    # Every command the node ran carried the path and the digest, quoted.
    assert all("sha256" in command or "hashlib" in command for command in node.commands)
