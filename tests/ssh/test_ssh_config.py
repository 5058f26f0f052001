"""~/.ssh/config is honoured as ssh would: HostName, Port, User and IdentityFile."""

from __future__ import annotations

import getpass
from pathlib import Path

from collectors.loopback import LoopbackFleet, UpdateRecorder
from collectors.loopback.harness import FAST_INTERVAL, fast_options
from collectors.ssh import NodeTarget, SshFleet


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


async def test_ssh_config_supplies_address_port_user_and_key(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        config = _write(
            tmp_path / "ssh_config",
            f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {node.port}\n"
            f"  User {getpass.getuser()}\n  IdentityFile {loopback.client_key_path}\n",
        )
        # Only a name: everything else comes from the ssh config file.
        target = NodeTarget(
            name="gpu-alias",
            host="gpu-alias",
            interval=FAST_INTERVAL,
            known_hosts=loopback.known_hosts,
        )
        rec = UpdateRecorder()
        async with SshFleet([target], rec, fast_options(ssh_config=(config,))):
            await rec.wait_until(lambda: rec.samples["gpu-alias"] >= 1, 10)
        assert rec.hellos["gpu-alias"].host == "node-001"
        assert node.execs >= 1


async def test_proxy_jump_from_the_ssh_config(tmp_path: Path) -> None:
    async with LoopbackFleet(2, gpus=2, mode="canned") as loopback:
        bastion, inner = loopback.nodes["node-001"], loopback.nodes["node-002"]
        user, key = getpass.getuser(), loopback.client_key_path
        config = _write(
            tmp_path / "ssh_config",
            f"Host inner\n  HostName 127.0.0.1\n  Port {inner.port}\n"
            f"  ProxyJump 127.0.0.1:{bastion.port}\n"
            f"Host *\n  User {user}\n  IdentityFile {key}\n",
        )
        target = NodeTarget(
            name="inner", host="inner", interval=FAST_INTERVAL, known_hosts=loopback.known_hosts
        )
        rec = UpdateRecorder()
        async with SshFleet([target], rec, fast_options(ssh_config=(config,))):
            await rec.wait_until(lambda: rec.samples["inner"] >= 1, 10)
            assert len(bastion.connections) == 1 and bastion.execs == 0
        assert rec.hellos["inner"].host == "node-002"
