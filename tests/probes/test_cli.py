"""``gpufleet probe`` end to end: config file, SSH to a simulated node, JSON, history."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from gpufleet.cli import main
from history.probes import read_probe_history

from .conftest import sim_fleet


def write_config(path: Path, port: int, key: str, known_hosts: str) -> Path:
    path.write_text(
        "[fleet]\n"
        'hosts = ["127.0.0.1"]\n'
        f"port = {port}\n"
        f'identity_file = "{key}"\n'
        f'known_hosts = "{known_hosts}"\n'
        "[probes]\n"
        f'probe_python = "{sys.executable}"\n'
        "timeout_s = 60\n",
        encoding="utf-8",
    )
    return path


async def test_probe_prints_json_records_history_and_fails_on_sdc(tmp_path: Path) -> None:
    async with sim_fleet(tmp_path, gpus=2, sdc={"node-001": [1]}) as fleet:
        node = fleet.nodes["node-001"]
        config = write_config(
            tmp_path / "fleet.toml", node.port, fleet.client_key_path, fleet.known_hosts
        )
        data_dir = tmp_path / "data"
        command = ["-m", "gpufleet", "probe", "127.0.0.1", "-c", str(config), "--json"]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *command,
            "--data-dir",
            str(data_dir),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 1, err.decode()
    report = json.loads(out)
    assert report["status"] == "ok" and report["node"] == "127.0.0.1"
    assert [v["verdict"] for v in report["verdicts"]] == ["pass", "fail"]
    assert "127.0.0.1: gemm ..." in err.decode()
    history = read_probe_history(data_dir, node="127.0.0.1")
    assert set(history["probe"].to_list()) == {"gemm", "hbm", "sdc"}


def test_an_unknown_node_or_bad_gpu_selection_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "fleet.toml", 22, "/nonexistent", "/nonexistent")
    assert main(["probe", "gpu-999", "-c", str(config)]) == 2
    assert "'gpu-999' is not in the configured fleet" in capsys.readouterr().err
    assert main(["probe", "127.0.0.1", "-c", str(config), "--gpus", "0;reboot"]) == 2
    assert "GPU selection" in capsys.readouterr().err
