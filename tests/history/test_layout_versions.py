"""Layout version 2 stamps the directory; a version-1 directory (no stamp, heartbeat or
monitor_gaps) still reads, and its open intervals end where its coverage ended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from history import HistoryRecorder
from history.layout import COVERAGE, NODE_STATES, SCHEMAS, layout_version, write_atomic
from history.ledger import load_ledger
from history.section import HistorySection
from history.states import StateInterval, to_frame
from ledger.sla import sla_for_month
from ledger.sla.section import SlaSection
from testkit.synthetic_history import snapshot

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()
MS = round(T0 * 1000)


def write_version_1(data_dir: Path) -> None:
    """What a recorder of layout version 1 left: coverage and an open unreachable interval."""
    day = "date=2026-09-10"
    rows = [
        StateInterval("n0", "up", MS, MS + 600_000),
        StateInterval("n0", "unreachable", MS + 600_000, None, ("timed out connecting",)),
    ]
    write_atomic(data_dir / NODE_STATES / day / "20260910T120000Z-aaaaaa.parquet", to_frame(rows))
    coverage = pl.DataFrame(
        {"start": [MS], "end": [MS + 1_200_000]}, schema={"start": pl.Int64(), "end": pl.Int64()}
    ).cast(SCHEMAS[COVERAGE])  # type: ignore[arg-type]
    write_atomic(data_dir / COVERAGE / day / "20260910T120000Z-aaaaaa.parquet", coverage)


def test_a_version_1_directory_reads_and_its_open_outage_ends_at_its_last_coverage(
    tmp_path: Path,
) -> None:
    write_version_1(tmp_path)
    assert layout_version(tmp_path) == 1
    result = sla_for_month(tmp_path, SlaSection(committed_nodes=1), "2026-09", T0 + 86_400)
    (outage,) = result.outages
    assert (outage.start_ms, outage.end_ms, outage.ongoing) == (MS + 600_000, MS + 1_200_000, False)
    assert result.down_node_ms == 600_000


def test_a_recorder_stamps_version_2_and_writes_a_heartbeat(tmp_path: Path) -> None:
    write_version_1(tmp_path)
    recorder = HistoryRecorder(tmp_path, HistorySection(flush_interval_s=1), clock=lambda: T0)
    assert layout_version(tmp_path) == 2
    assert json.loads((tmp_path / "layout.json").read_text()) == {"version": 2}
    recorder.record(snapshot(T0 + 1, 1))
    recorder.close()
    beat = json.loads((tmp_path / "recorder.heartbeat").read_text())
    assert beat["session"] == recorder.session


def test_a_reader_sees_the_recorder_live_only_while_it_holds_the_lock_and_beats(
    tmp_path: Path,
) -> None:
    day = datetime.fromtimestamp(T0, UTC).date()
    recorder = HistoryRecorder(tmp_path, HistorySection(flush_interval_s=1), clock=lambda: T0)
    recorder.record(snapshot(T0, 1))
    recorder.flush()
    assert load_ledger(tmp_path, day, day, T0 + 5).live  # lock held, heartbeat 5 s old
    assert not load_ledger(tmp_path, day, day, T0 + 60).live  # heartbeat too old
    recorder.close()
    assert not load_ledger(tmp_path, day, day, T0 + 1).live  # fresh beat, but no lock
