"""Against a real OpenSSH sshd: upload the real agent zipapp once, run it on the simulator."""

from __future__ import annotations

import getpass
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.bundle import agent_zipapp_bytes
from collectors.sim import default_scenario_path
from collectors.ssh import NodeTarget, SshFleet, SshOptions, connect_node
from collectors.ssh.check import check_node
from testkit.loopback.openssh import OpenSshServer
from testkit.loopback.recorder import UpdateRecorder, eventually


@pytest.fixture
async def sshd() -> AsyncIterator[OpenSshServer]:
    async with OpenSshServer() as server:
        yield server


def _target(sshd: OpenSshServer, cache: Path) -> NodeTarget:
    return NodeTarget(
        name="node-001",
        host="127.0.0.1",
        port=sshd.port,
        user=getpass.getuser(),
        identity_files=(sshd.client_key_path,),
        python=sys.executable,
        interval=0.25,
        known_hosts=sshd.known_hosts,
        remote_cache_dir=str(cache),  # absolute: sshd runs commands in the real home
        agent_args=(
            "--sim", str(default_scenario_path()), "--sim-node", "node-001",
            "--sim-gpus", "8", "--host", "node-001",
        ),
    )  # fmt: skip


def _agent_processes(path: Path) -> list[int]:
    """Pids whose command line mentions ``path`` (the uploaded agent)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(path).encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


async def _stream_twice(target: NodeTarget, options: SshOptions) -> None:
    rec = UpdateRecorder()
    async with SshFleet([target], rec, options) as fleet:
        await rec.wait_until(lambda: rec.samples["node-001"] >= 2, 60)
        assert fleet.statuses()["node-001"].status == "streaming"
    hello = rec.hellos["node-001"]
    assert (hello.host, len(hello.gpus)) == ("node-001", 8)


async def test_real_sshd_uploads_once_and_streams(sshd: OpenSshServer, tmp_path: Path) -> None:
    cache = tmp_path / "remote-cache"
    name, content = agent_zipapp_bytes()
    options = SshOptions(ssh_config=None, connect_timeout=10, agent_bundle=(name, content))
    target = _target(sshd, cache)
    await _stream_twice(target, options)
    uploaded = cache / name
    assert uploaded.read_bytes() == content
    first = uploaded.stat()
    await _stream_twice(target, options)
    second = uploaded.stat()
    assert (second.st_ino, second.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    assert sorted(p.name for p in cache.iterdir()) == [name]  # no temp file left behind
    # Closing the channel ends the remote agent: nothing keeps running on the node.
    await eventually(lambda: not _agent_processes(uploaded), 10)


async def test_real_sshd_check_and_bad_key(sshd: OpenSshServer, tmp_path: Path) -> None:
    options = SshOptions(ssh_config=None, connect_timeout=10)
    bundle = agent_zipapp_bytes()
    result = await check_node(_target(sshd, tmp_path / "c"), options, bundle, hello_within=60)
    assert result.ok and result.hello is not None
    assert result.hello.driver is not None
    stranger = tmp_path / "stranger"
    stranger.write_text("")
    wrong = NodeTarget(
        name="node-001",
        host="127.0.0.1",
        port=sshd.port,
        user=getpass.getuser(),
        identity_files=(sshd.client_key_path,),
        known_hosts=str(stranger),
    )
    refused = await check_node(wrong, options, bundle)
    assert refused.status == "host-key-mismatch"
    assert sshd.host_key.get_fingerprint() in refused.reason


async def _negotiated(target: NodeTarget, options: SshOptions) -> dict[str, str]:
    conn = await connect_node(target, options)
    try:
        names = ("send_cipher", "recv_cipher", "send_mac", "send_compression", "recv_compression")
        return {name: str(conn.get_extra_info(name)) for name in names}
    finally:
        conn.close()
        await conn.wait_closed()


async def test_real_sshd_gets_aes_gcm_and_no_compression_even_if_the_config_asks(
    sshd: OpenSshServer, tmp_path: Path
) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n    Compression yes\n")
    options = SshOptions(ssh_config=(str(config),), connect_timeout=10)
    target = _target(sshd, tmp_path / "cache")
    # The control: OpenSSH offers zlib, and asyncssh takes it when the config says so.
    library = await _negotiated(target, replace(options, compression_algs=None))
    assert library["send_compression"] == "zlib@openssh.com"
    ours = await _negotiated(target, options)
    assert ours == {
        "send_cipher": "aes128-gcm@openssh.com",
        "recv_cipher": "aes128-gcm@openssh.com",
        "send_mac": "aes128-gcm@openssh.com",  # GCM authenticates packets: no separate MAC
        "send_compression": "none",
        "recv_compression": "none",
    }
