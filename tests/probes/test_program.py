"""The bundled probe program as a node runs it: a subprocess streaming JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from probes.bundle import BUNDLED_PACKAGE, ProbeBundle, build_probe_bundle

from .conftest import ENDLESS, group_members


@pytest.fixture
def pyz(tmp_path: Path, bundle: ProbeBundle) -> Path:
    path = tmp_path / bundle.name
    path.write_bytes(bundle.content)
    return path


def start(pyz: Path, faults: dict[str, Any] | None, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_SIM_PROBE_FAULTS"}
    env["PYTHONWARNINGS"] = "ignore"
    if faults is not None:
        env["GPUFLEET_SIM_PROBE_FAULTS"] = json.dumps(faults)
    command = [sys.executable, str(pyz), *args]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )


def lines_of(process: subprocess.Popen[str], timeout: float = 60) -> list[dict[str, Any]]:
    out, _ = process.communicate(timeout=timeout)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_the_bundle_is_reproducible_and_named_by_its_hash(bundle: ProbeBundle) -> None:
    again = build_probe_bundle()
    assert again.content == bundle.content
    assert bundle.name == f"probes-{bundle.sha256[:12]}.pyz"
    names = zipfile.ZipFile(BytesIO(bundle.content)).namelist()
    assert names[0] == "__main__.py"
    assert f"{BUNDLED_PACKAGE}/cli.py" in names
    assert not any("__pycache__" in n for n in names)


def test_the_bundle_changes_when_a_kernel_changes(tmp_path: Path, bundle: ProbeBundle) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    source = Path(__file__).resolve().parents[2] / "probes" / "kernels"
    for file in source.glob("*.py"):
        (kernels / file.name).write_bytes(file.read_bytes())
    assert build_probe_bundle(kernels).content == bundle.content
    (kernels / "gemm.py").write_text((kernels / "gemm.py").read_text() + "\n# changed\n")
    assert build_probe_bundle(kernels).sha256 != bundle.sha256


def test_the_full_suite_streams_every_probe_on_the_chosen_gpus(pyz: Path) -> None:
    process = start(pyz, {"gpus": 3}, "--suite", "full", "--gpus", "0,2", "--timeout", "60")
    lines = lines_of(process)
    assert process.returncode == 0
    assert lines[0]["type"] == "hello" and lines[0]["simulated"] is True
    assert [g["index"] for g in lines[0]["gpus"]] == [0, 2]
    assert lines[-1]["type"] == "done" and lines[-1]["status"] == "ok"
    figures = {(m["probe"], m["metric"], m["gpu"]) for m in lines if m["type"] == "result"}
    expected = {
        (probe, metric, gpu)
        for probe, metric in [
            ("gemm", "bf16"),
            ("gemm", "fp32"),
            ("hbm", "d2d"),
            ("sdc", "max_rel_err"),
            ("pcie", "h2d"),
            ("pcie", "d2h"),
            ("nccl", "allreduce_busbw"),
        ]
        for gpu in (0, 2)
    }
    assert figures == expected
    busbw = [m["value"] for m in lines if m["type"] == "result" and m["probe"] == "nccl"]
    assert all(v > 0 for v in busbw)


def test_without_a_gpu_the_program_refuses_unless_allowed(pyz: Path) -> None:
    process = start(pyz, None, "--timeout", "30")
    lines = lines_of(process)
    assert process.returncode == 4
    assert [m["type"] for m in lines] == ["error", "done"]
    assert lines[0]["code"] == "no_gpu"


def test_the_time_limit_ends_a_stuck_suite(pyz: Path) -> None:
    process = start(pyz, {"gpus": 1, "slow": {"0": ENDLESS}}, "--timeout", "3")
    lines = lines_of(process, timeout=30)
    assert process.returncode == 124
    assert lines[-1]["type"] == "done" and lines[-1]["status"] == "timeout"
    assert any(m["type"] == "error" and m["code"] == "timeout" for m in lines)


def test_sigterm_stops_the_probe_and_its_nccl_ranks(pyz: Path) -> None:
    # Two simulated GPUs, the first endlessly slow: the suite is busy when SIGTERM comes.
    process = start(pyz, {"gpus": 2, "slow": {"0": ENDLESS}}, "--suite", "full", "--timeout", "60")
    assert process.stdout is not None
    hello = json.loads(process.stdout.readline())
    assert hello["pgid"] == hello["pid"] == process.pid
    process.send_signal(signal.SIGTERM)
    rest = [json.loads(line) for line in process.stdout.read().splitlines()]
    assert process.wait(timeout=30) == 143
    assert rest[-1]["status"] == "terminated"
    assert group_members(process.pid) == []
