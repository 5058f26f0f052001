"""``gpufleet report`` end to end on the hand-worked month (tests/delivery/month.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.cli import main
from tests.delivery.month import write_month

CONFIG = """\
[contract]
gpu_model = "NVIDIA H100 80GB HBM3"
gpus_per_node = 2
usable_memory_gib = 79
power_limit_w = 700
pcie_gen = 5
pcie_width = 16
gpu_hour_price = 2.50
deviation_credits = { power_limit = 1.00 }

[energy]
pue = 1.2
grid_intensity_g_per_kwh = 400
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("report")
    data_dir = root / "data"
    write_month(data_dir)
    config = root / "gpufleet.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return data_dir, config


def _report(history: tuple[Path, Path], out: Path, *extra: str) -> bytes:
    data_dir, config = history
    args = ["report", "--data-dir", str(data_dir), "-c", str(config), "-o", str(out), *extra]
    assert main(args) == 0
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_a_stopped_history_reports_the_same_bytes_twice(
    history: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    first = _report(history, tmp_path / f"a.{fmt}", "--month", "2026-02", "--format", fmt)
    second = _report(history, tmp_path / f"b.{fmt}", "--month", "2026-02", "--format", fmt)
    assert first == second
    assert len(first) > 500


def test_json_report_has_the_documented_schema(history: tuple[Path, Path], tmp_path: Path) -> None:
    data = json.loads(
        _report(history, tmp_path / "r.json", "--month", "2026-02", "--format", "json")
    )
    assert data["schema"] == "gpufleet-report/1"
    assert (data["start"], data["end"]) == ("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
    delivery = data["sections"][0]
    assert (delivery["key"], delivery["title"]) == ("delivery", "Delivered against contracted")
    assert delivery["data"]["classes"]["idle"]["cost"] == "2680.00"


def test_a_week_is_an_iso_week(history: tuple[Path, Path], tmp_path: Path) -> None:
    data = json.loads(
        _report(history, tmp_path / "w.json", "--week", "2026-W07", "--format", "json")
    )
    # 2026-W07 is Monday 9 Feb to Monday 16 Feb; 10 Feb was not monitored: 24 h x 4 GPUs.
    assert (data["start"], data["end"]) == ("2026-02-09T00:00:00Z", "2026-02-16T00:00:00Z")
    classes = data["sections"][0]["data"]["classes"]
    assert classes["unmonitored"]["gpu_hours"] == "96.000"
    assert data["sections"][0]["data"]["paid_gpu_hours"] == "672.000"


def test_since_until_and_markdown_tables(history: tuple[Path, Path], tmp_path: Path) -> None:
    text = _report(history, tmp_path / "r.md", "--since", "2026-02-05", "--until", "2026-02-06")
    body = text.decode()
    # 5 Feb: n1 gpu1 idle 24 h, n2 gpu0 idle 16 h (40 of every 60 minutes).
    assert "| n1 | 24.000 | 0.5000 | 60.00 USD |" in body
    assert "| n1 | GPU 1 | power\\_limit | 2026-02-05T10:00:00Z | 2026-02-05T13:00:00Z |" in body


def test_a_bad_period_is_refused(
    history: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, config = history
    args = ["report", "--data-dir", str(data_dir), "-c", str(config), "--week", "2026-W60"]
    assert main(args) == 2
    assert "no such ISO week" in capsys.readouterr().err
