"""`gpufleet demo`'s counts: a word where a number belongs is named as such."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_nodes_that_is_not_a_number_says_so_in_words() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gpufleet.cli", "demo", "--nodes", "abc"],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "argument --nodes: expected a whole number, got 'abc'" in proc.stderr, proc.stderr
    assert "_positive_int" not in proc.stderr


def test_a_soak_that_is_not_a_duration_fails_before_any_fleet_starts(tmp_path: Path) -> None:
    for argv, message in (
        (["--accept", "--soak", "banana"], "--soak 'banana': expected a duration like 90s"),
        (["--soak", "5s"], "--soak needs --accept"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "gpufleet.cli", "demo", "--data-dir", str(tmp_path), *argv],
            capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert not (tmp_path / "campaign").exists()
