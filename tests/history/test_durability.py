"""Crash safety, the recorder lock, restart, damaged files and retention."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from fleet.model import EventRecord
from history import HistoryRecorder
from history.layout import COVERAGE, GPU_MINUTES, NODE_STATES, read_table, write_atomic
from history.section import HistorySection
from history.states import StateInterval, to_frame
from testkit.synthetic_history import snapshot
from tests.runtime.waits import wait_until_blocking

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()
CONFIG = HistorySection(flush_interval_s=5)

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from history.section import HistorySection
    from history import HistoryRecorder
    from testkit.synthetic_history import snapshot
    from fleet.model import EventRecord

    t0 = float(sys.argv[2])
    recorder = HistoryRecorder(Path(sys.argv[1]), HistorySection(), clock=lambda: t0)
    i = 0
    while True:
        t = t0 + i * 305  # every tick closes a minute and rewrites an hour file
        state = "broken" if i % 3 == 0 else "up"
        event = EventRecord(t=t, node="gpu-0001", kind="xid", gpu=0, code=79, detail="off the bus")
        recorder.record(snapshot(t, 40, states=lambda n: state if n == 1 else "up", events=[event]))
        recorder.flush()
        print(i, flush=True)
        i += 1
    """
)


def every_parquet_file_reads(data_dir: Path) -> int:
    files = sorted(data_dir.rglob("*.parquet"))
    for path in files:
        pl.read_parquet(path)  # raises if a file is damaged
    return len(files)


def test_sigkill_while_writing_leaves_every_file_readable_and_restart_resumes(
    tmp_path: Path,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(T0)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    for line in child.stdout:  # wait until it is deep in its write loop
        if int(line) >= 25:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    assert every_parquet_file_reads(tmp_path) >= 8  # hours of rollups, events, states, coverage
    assert read_table(tmp_path, GPU_MINUTES).height >= 25 * 40 * 8  # flushed before each print
    recorder = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0 + 4000)
    assert recorder.recording  # the killed process's lock died with it
    assert not list(tmp_path.rglob(".tmp-*"))  # leftovers of the interrupted write are gone
    assert set(recorder.states.open) == {f"gpu-{n:04d}" for n in range(40)}
    assert recorder.coverage.earlier and recorder.coverage.earlier[0][0] == T0 * 1000
    assert recorder.wait_resumed(timeout=60)
    assert recorder.utilization_summary(T0 + 2000).avg_1h is not None  # rollups resumed
    recorder.close()


def test_a_second_recorder_does_not_record_and_says_why(tmp_path: Path) -> None:
    first = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    second = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    assert first.recording and not second.recording
    assert f"pid {os.getpid()}" in second.lock_holder_message
    assert "does not record" in second.lock_holder_message
    for s in range(70):
        second.record(snapshot(T0 + s, 2))
    second.close()
    assert list(tmp_path.rglob("*.parquet")) == []
    assert second.wait_resumed(timeout=60)
    assert second.utilization_summary(T0 + 70).avg_1h is not None  # it still works in memory
    first.close()
    third = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    assert third.recording
    third.close()


def states_of(node: str, data_dir: Path) -> list[tuple[str, object]]:
    rows = read_table(data_dir, NODE_STATES).filter(pl.col("node") == node).sort("start")
    return [(r["state"], r["end"]) for r in rows.iter_rows(named=True)]


def test_transitions_become_intervals_and_a_restart_resumes_them(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)

    for s in range(20):
        recorder.record(
            snapshot(T0 + s, 2, states=lambda n, s=s: "broken" if n == 1 and s >= 10 else "up")
        )  # type: ignore[misc]
    recorder.close()
    assert [state for state, _ in states_of("gpu-0001", tmp_path)] == ["up", "broken"]
    assert states_of("gpu-0001", tmp_path)[1][1] is None  # still open

    # Restart 1 h later: node 1 is up again. What happened while nothing recorded is unknown,
    # so the broken interval ends where the last coverage ended (T0 + 19 s).
    later = T0 + 3600
    resumed = HistoryRecorder(tmp_path, CONFIG, clock=lambda: later)
    resumed.record(snapshot(later, 2))
    resumed.close()
    rows = read_table(tmp_path, NODE_STATES).filter(pl.col("node") == "gpu-0001").sort("start")
    ends = [None if e is None else e.timestamp() for e in rows["end"].to_list()]
    assert rows["state"].to_list() == ["up", "broken", "up"]
    assert ends == [T0 + 10, T0 + 19, None]
    node0 = read_table(tmp_path, NODE_STATES).filter(pl.col("node") == "gpu-0000")
    assert node0.height == 1  # still up: the same interval continues across the restart
    assert len(read_table(tmp_path, COVERAGE)) == 2


def test_events_are_written_with_their_columns(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    event = EventRecord(
        t=T0 + 1.5, node="gpu-0000", kind="xid", gpu=3, uuid="GPU-x", code=79, detail="lost"
    )
    recorder.record(snapshot(T0, 1))
    recorder.record(snapshot(T0 + 2, 1, events=[event]))
    recorder.flush()
    rows = read_table(tmp_path, "events")
    assert rows.select("node", "gpu", "uuid", "kind", "code", "detail").rows() == [
        ("gpu-0000", 3, "GPU-x", "xid", 79, "lost")
    ]
    assert rows["ts"][0].timestamp() == T0 + 1.5
    recorder.close()


def test_coverage_grows_splits_at_gaps_and_at_midnight(tmp_path: Path) -> None:
    midnight = datetime(2026, 9, 11, tzinfo=UTC).timestamp()
    recorder = HistoryRecorder(tmp_path, HistorySection(coverage_gap_s=30), clock=lambda: T0)
    for t in (midnight - 20, midnight - 10, midnight + 10, midnight + 100, midnight + 110):
        recorder.record(snapshot(t, 1))
    recorder.close()
    spans = read_table(tmp_path, COVERAGE).sort("start")
    as_offsets = [(s.timestamp() - midnight, e.timestamp() - midnight) for s, e in spans.rows()]
    assert as_offsets == [(-20, 0), (0, 10), (100, 110)]  # 10 → 100 s is a gap longer than 30


def test_a_damaged_file_is_skipped_with_a_warning_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    for s in range(130):
        recorder.record(snapshot(T0 + s, 2))
    recorder.close()
    good = read_table(tmp_path, GPU_MINUTES).height
    damaged = tmp_path / "gpu_minutes" / "date=2026-09-10" / "11-20260910T110000Z-dead00.parquet"
    damaged.write_bytes(b"PAR1 this is not a parquet file")
    (tmp_path / "node_states" / "date=2026-09-10" / "zz.parquet").write_bytes(b"junk")

    with caplog.at_level(logging.WARNING):
        assert read_table(tmp_path, GPU_MINUTES).height == good
        resumed = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0 + 200)
    assert str(damaged) in caplog.text
    assert "zz.parquet" in caplog.text
    assert resumed.recording and len(resumed.states.open) == 2
    resumed.close()


def test_retention_deletes_old_partitions_but_keeps_open_intervals(tmp_path: Path) -> None:
    old_day = datetime(2026, 1, 2, tzinfo=UTC).timestamp()
    first = HistoryRecorder(tmp_path, CONFIG, clock=lambda: old_day)
    for s in range(70):
        first.record(snapshot(old_day + s, 1))  # node 0 up, interval still open
    first.close()
    (tmp_path / "probes" / "date=2026-01-02").mkdir(parents=True)
    (tmp_path / "probes" / "date=2026-09-09").mkdir(parents=True)
    recorder = HistoryRecorder(tmp_path, HistorySection(retention_days=30), clock=lambda: T0)
    recorder.close()
    assert not (tmp_path / "gpu_minutes" / "date=2026-01-02").exists()
    assert not (tmp_path / "coverage" / "date=2026-01-02").exists()
    assert not (tmp_path / "probes" / "date=2026-01-02").exists()  # another room's table
    assert (tmp_path / "node_states" / "date=2026-01-02").exists()  # holds an open interval
    assert (tmp_path / "probes" / "date=2026-09-09").exists()


def test_readers_never_see_temporaries(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    for s in range(70):
        recorder.record(snapshot(T0 + s, 1))
    recorder.close()
    folder = tmp_path / "gpu_minutes" / "date=2026-09-10"
    (folder / ".tmp-12-half-written.parquet.123").write_bytes(b"PAR1 half")
    assert read_table(tmp_path, GPU_MINUTES).height == 2 * 8


def test_two_open_intervals_of_one_node_are_reconciled_on_restart(tmp_path: Path) -> None:
    """A crash between two writes can leave a node with two open intervals in two files."""
    folder = tmp_path / "node_states" / "date=2026-09-10"
    t0_ms = int(T0 * 1000)
    write_atomic(folder / "a.parquet", to_frame([StateInterval("gpu-0000", "up", t0_ms, None)]))
    write_atomic(
        folder / "b.parquet", to_frame([StateInterval("gpu-0000", "broken", t0_ms + 5000, None)])
    )
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0 + 10)
    recorder.record(snapshot(T0 + 10, 1, states=lambda n: "broken"))
    recorder.close()
    rows = read_table(tmp_path, NODE_STATES).sort("start")
    ends = [None if e is None else e.timestamp() - T0 for e in rows["end"].to_list()]
    assert rows["state"].to_list() == ["up", "broken"] and ends == [5, None]


def test_an_unusable_directory_runs_without_recording_and_says_why(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    recorder = HistoryRecorder(blocker / "data", CONFIG, clock=lambda: T0)
    assert not recorder.recording
    assert recorder.lock_holder_message.startswith(f"cannot record into {blocker / 'data'}")
    recorder.record(snapshot(T0, 1))
    recorder.close()
    assert recorder.utilization_summary(T0).now is not None


def test_a_standby_takes_over_when_the_recorder_releases_the_directory(tmp_path: Path) -> None:
    first = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    standby = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    assert first.recording and standby.standby and not standby.recording
    first.record(snapshot(T0, 2))
    first.close()
    s = 0

    def took_over() -> bool:  # it retries about once a second, on its ticks
        nonlocal s
        s += 1
        standby.record(snapshot(T0 + s, 2))
        return standby.recording

    wait_until_blocking(took_over, 10)
    standby.record(snapshot(T0 + s + 1, 2))
    standby.close()
    sessions = {p.stem for p in (tmp_path / COVERAGE).rglob("*.parquet")}
    assert sessions == {first.session, standby.session}
    assert standby.lock_holder_message == ""
