"""``gpufleet check``: every node tried once, a table, a failing exit status when any failed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from collectors.ssh import SshOptions
from gpufleet.commands.check import check_fleet, format_table
from testkit.loopback import LoopbackFleet, NodeBehaviour


async def test_check_fleet_reports_hello_facts_and_failures(fast_options: SshOptions) -> None:
    refuse = {"node-002": NodeBehaviour("auth-fail")}
    async with LoopbackFleet(2, gpus=4, mode="canned", behaviours=refuse) as loopback:
        # A healthy agent never closes its channel: the check must return at its hello,
        # not at the hello deadline, an hour away here.
        checking = check_fleet(loopback.targets(), fast_options, hello_within=3600.0)
        results = await asyncio.wait_for(checking, 60)
    assert [r.name for r in results] == ["node-001", "node-002"]
    assert results[0].ok and results[0].hello is not None
    assert len(results[0].hello.gpus) == 4
    assert (results[1].ok, results[1].status) == (False, "auth-failed")
    table = format_table(results).splitlines()
    assert table[1].split()[:2] == ["node-001", "ok"]
    assert "NVIDIA H100 80GB HBM3 x4, driver 550.54.15" in table[1]
    assert table[2].split()[:2] == ["node-002", "auth-failed"]


def _config(path: Path, loopback: LoopbackFleet, hosts: list[str]) -> Path:
    port = loopback.nodes["node-001"].port
    path.write_text(
        f"""
[fleet]
hosts = {hosts!r}
port = {port}
identity_file = "{loopback.client_key_path}"
known_hosts = "{loopback.known_hosts}"
python = "{sys.executable}"
connect_timeout = 2
""".replace("'", '"'),
        encoding="utf-8",
    )
    return path


async def _gpufleet_check(config: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "check", "-c", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_check_command_exit_status(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=8, mode="canned") as loopback:
        good = _config(tmp_path / "good.toml", loopback, ["127.0.0.1"])
        status, out = await _gpufleet_check(good)
        assert status == 0, out
        assert "127.0.0.1  ok" in out and "1 of 1 nodes ok" in out
        assert loopback.nodes["node-001"].uploads == 1  # the real agent zipapp went up
        # 127.0.0.2 is loopback too, but nothing listens there: refused, exit 1.
        mixed = _config(tmp_path / "mixed.toml", loopback, ["127.0.0.1", "127.0.0.2"])
        status, out = await _gpufleet_check(mixed)
        assert status == 1, out
        assert "127.0.0.2  unreachable  connection refused" in out
        assert "1 of 2 nodes ok" in out
        assert loopback.nodes["node-001"].uploads == 1  # the second run reused it


async def test_check_command_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[fleet]\nhosts = ["gpu-[001-"]\n', encoding="utf-8")
    status, out = await _gpufleet_check(bad)
    assert status == 2
    assert f"{bad}: key 'fleet.hosts.0'" in out
    assert "not a hostlist expression" in out
