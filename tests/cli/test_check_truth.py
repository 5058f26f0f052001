"""`gpufleet check` against a real OpenSSH sshd on a node without a GPU driver: the
agent says hello with no GPU, and check fails the node with the cause in one line."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from collectors.protocol import GpuInfo, Hello
from collectors.ssh.check import gpu_shortfall
from testkit.loopback.openssh import OpenSshServer


@pytest.fixture
async def sshd() -> AsyncIterator[OpenSshServer]:
    async with OpenSshServer() as server:
        yield server


def _config(path: Path, sshd: OpenSshServer, cache: Path) -> Path:
    path.write_text(
        f"""
[fleet]
hosts = ["127.0.0.1"]
port = {sshd.port}
identity_file = "{sshd.client_key_path}"
known_hosts = "{sshd.known_hosts}"
python = "{sys.executable}"
remote_cache_dir = "{cache}"
connect_timeout = 10
""",
        encoding="utf-8",
    )
    return path


async def test_check_fails_a_node_without_nvml_with_the_cause(
    sshd: OpenSshServer, tmp_path: Path
) -> None:
    config = _config(tmp_path / "fleet.toml", sshd, tmp_path / "cache")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "check", "-c", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 90)
    text = out.decode()
    assert proc.returncode == 1, text
    row = next(line for line in text.splitlines() if line.startswith("127.0.0.1"))
    assert row.split()[1] == "failed", text
    assert "no NVML (NVMLError_LibraryNotFound): 0 of 8 expected GPUs" in row, text
    assert "0 of 1 nodes ok" in text


def _hello(gpus: int) -> Hello:
    info = [GpuInfo(index=i, uuid=f"GPU-{i}", name="H100") for i in range(gpus)]
    return Hello(
        v=1, t=0.0, agent="0.1.0", host="n", interval=1.0, slow_interval=10.0,
        gpu_fields=[], gpu_slow_fields=[], port_fields=[], nic_fields=[], gpus=info,
        nvml="12.550",
    )  # fmt: skip


def test_a_node_with_fewer_gpus_than_expected_fails_by_count() -> None:
    assert gpu_shortfall(_hello(7), 8, None) == "1 GPU missing: 7 of 8 expected GPUs visible"
    assert gpu_shortfall(_hello(8), 8, None) is None
