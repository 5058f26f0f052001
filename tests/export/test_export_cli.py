"""``gpufleet export`` from the command line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from gpufleet.cli import main
from history import HistoryRecorder
from history.section import HistorySection
from testkit.synthetic_history import snapshot

T0 = datetime(2026, 9, 10, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    recorder = HistoryRecorder(tmp_path / "data", HistorySection(), clock=lambda: T0)
    for s in range(0, 7200, 30):
        recorder.record(snapshot(T0 + s, 2, 2))
    recorder.close()
    return tmp_path / "data"


def test_export_writes_the_format_of_the_suffix_and_shows_progress(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fleet.csv"
    status = main(["export", "--data-dir", str(data_dir), "--since", "2026-09-09",
                   "--until", "2026-09-11", "--level", "fleet", "--resolution", "1h",
                   "--window", "2h", "-o", str(out)])  # fmt: skip
    assert status == 0
    rows = pl.read_csv(out)
    assert rows["ts"].to_list() == ["2026-09-10T10:00:00Z", "2026-09-10T11:00:00Z"]
    assert rows["samples"].to_list() == [120 * 4, 120 * 4]
    assert "util_rolling_mean" in rows.columns
    err = capsys.readouterr().err
    assert "day 3/3" in err and "done" in err and f"wrote {out}" in err  # 2 h before 09-09 too


def test_a_bad_since_is_an_error_not_a_traceback(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["export", "--data-dir", str(data_dir), "--since", "yesterday-ish",
                   "-o", str(tmp_path / "x.parquet")])  # fmt: skip
    assert status == 2
    assert "expected '7d'" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_an_empty_data_directory_is_named_in_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["export", "--data-dir", str(tmp_path / "nothing"), "--since", "7d",
                   "-o", str(tmp_path / "x.csv")])  # fmt: skip
    assert status == 2
    assert f"no recorded history in {tmp_path / 'nothing'}" in capsys.readouterr().err
