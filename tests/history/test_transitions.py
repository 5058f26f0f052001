"""The ``transitions`` table: GPU/port verdicts and connection changes survive a restart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb

from fleet.desk import OperatorDesk
from fleet.event_log import LogEntry
from fleet.model import FleetSnapshot
from history.desk_log import DeskHistory
from history.transitions import TRANSITIONS, TransitionJournal, read_transitions
from testkit.snapshots import T0, demo_snapshot, lose_gpu, port_down, unreachable
from tests.runtime.waits import wait_until_blocking


def ticks() -> list[FleetSnapshot]:
    """Healthy; node-0003 loses GPU 5 and node-0001's port 2 goes down; node-0002 drops."""
    healthy = demo_snapshot(4, faults=False)
    n = healthy.nodes
    t1, t2 = T0 + 60, T0 + 120
    broken = replace(
        healthy, taken_at=t1, nodes=(port_down(n[0], 2, t1), n[1], lose_gpu(n[2], 5, t1), n[3])
    )
    gone = replace(
        broken, taken_at=t2, nodes=(*broken.nodes[:1], unreachable(n[1], t2), *broken.nodes[2:])
    )
    return [healthy, broken, gone]


def persisted(entries: list[LogEntry]) -> set[tuple[int, str, str, str]]:
    return {e.key for e in entries if e.kind in ("gpu", "port", "connection")}


def test_a_new_process_reads_the_transitions_the_last_one_saw(tmp_path: Path) -> None:
    desk = OperatorDesk(
        data_dir=tmp_path, clock=lambda: T0 + 120, history=DeskHistory(tmp_path, record=True)
    )
    for snapshot in ticks():
        desk.observe(snapshot)
    seen = list(desk.session.entries)
    desk.close()
    kinds = {(e.kind, e.node) for e in seen}
    assert {("gpu", "node-0003"), ("port", "node-0001"), ("connection", "node-0002")} <= kinds

    restarted = OperatorDesk(
        data_dir=tmp_path, clock=lambda: T0 + 300, history=DeskHistory(tmp_path)
    )
    log = restarted.event_log(3600)
    assert persisted(list(log)) == persisted(seen)
    gpu = next(e for e in log if e.kind == "gpu")
    assert (gpu.node, gpu.gpu, gpu.verdict, gpu.severity) == ("node-0003", 5, "lost", "bad")
    restarted.close()


def test_duckdb_reads_the_table(tmp_path: Path) -> None:
    desk = OperatorDesk(
        data_dir=tmp_path, clock=lambda: T0 + 120, history=DeskHistory(tmp_path, record=True)
    )
    for snapshot in ticks():
        desk.observe(snapshot)
    desk.close()
    glob = str(tmp_path / TRANSITIONS / "date=*" / "*.parquet")
    rows = duckdb.sql(
        f"SELECT kind, node, gpu, verdict FROM read_parquet('{glob}', hive_partitioning = true) "
        "ORDER BY ts, kind, node"
    ).fetchall()
    expected = read_transitions(tmp_path).sort(["ts", "kind", "node"])
    assert rows == list(expected.select("kind", "node", "gpu", "verdict").iter_rows())
    assert ("gpu", "node-0003", 5, "lost") in rows


def test_rows_are_on_disk_before_the_process_ends(tmp_path: Path) -> None:
    """A crash (no close) loses at most the rows since the last flush: written ones stay."""
    journal = TransitionJournal(tmp_path, flush_s=0.0)
    entry = LogEntry(T0, "node-0001", "gpu", "GPU 1 fail: XID 48", "bad", 1, "fail")
    journal.add([entry, replace(entry, kind="xid")], now=T0)
    wait_until_blocking(lambda: len(read_transitions(tmp_path)) == 1, 30)
    # A temporary a killed writer left, and a damaged file, are not read (nor fatal).
    folder = next((tmp_path / TRANSITIONS).iterdir())
    (folder / ".tmp-00-x.parquet.1").write_bytes(b"half")
    (folder / "01-damaged.parquet").write_bytes(b"not parquet")
    frame = read_transitions(tmp_path)
    assert frame.select("kind", "gpu", "verdict").rows() == [("gpu", 1, "fail")]
    journal.close()


def test_a_process_that_does_not_record_writes_nothing(tmp_path: Path) -> None:
    desk = OperatorDesk(data_dir=tmp_path, clock=lambda: T0 + 120, history=DeskHistory(tmp_path))
    for snapshot in ticks():
        desk.observe(snapshot)
    desk.close()
    assert not (tmp_path / TRANSITIONS).exists()
