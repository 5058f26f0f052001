"""The event log's history half: entries read back from the recorded tables.

Node state intervals, agent events, probe results and the ``transitions`` table become
:class:`fleet.event_log.LogEntry` values, so the operator's desk shows what happened
before this process started. :class:`DeskHistory` is what ``fleet.desk.OperatorDesk``
is handed to read (and, in the recording process, write) that history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from fleet.event_log import LogEntry, Severity, event_entry, state_severity
from fleet.model import EventRecord
from history.layout import EVENTS, NODE_STATES, days_between, read_table
from history.probes import read_probe_history
from history.transitions import TransitionJournal, read_transitions, transition_entries


class DeskHistory:
    """The recorded event log of one data directory; with ``record`` it also keeps the
    ``transitions`` table (only the process holding the recorder lock may)."""

    def __init__(self, data_dir: Path, *, record: bool = False) -> None:
        self.data_dir = data_dir
        self.journal = TransitionJournal(data_dir) if record else None

    def read(self, since: float, until: float) -> list[LogEntry]:
        return read_history_log(self.data_dir, since, until)

    def add(self, entries: Sequence[LogEntry], t: float) -> None:
        if self.journal is not None:
            self.journal.add(entries, t)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


def _day(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def read_history_log(data_dir: Path | None, since: float, until: float) -> list[LogEntry]:
    """Node state changes, events and probe results recorded between ``since`` and
    ``until`` (unix seconds), newest first. Unreadable files are skipped by the readers."""
    # Deferred: history imports fleet.facade, which imports this module.

    if data_dir is None or not data_dir.is_dir():
        return []
    days = list(days_between(_day(since).date(), _day(until).date()))
    entries: list[LogEntry] = []
    entries.extend(_state_entries(read_table(data_dir, NODE_STATES, days), since, until))
    entries.extend(_event_entries(read_table(data_dir, EVENTS, days), since, until))
    entries.extend(transition_entries(read_transitions(data_dir, days), since, until))
    if (data_dir / "probes").is_dir():
        entries.extend(_probe_entries(read_probe_history(data_dir, since=since), since, until))
    entries.sort(key=lambda e: e.t, reverse=True)
    return entries


def _window(frame: pl.DataFrame, column: str, since: float, until: float) -> pl.DataFrame:
    ms = pl.col(column).dt.epoch("ms")
    return frame.filter((ms >= since * 1000) & (ms <= until * 1000))


def _state_entries(frame: pl.DataFrame, since: float, until: float) -> Iterable[LogEntry]:
    for row in _window(frame, "start", since, until).iter_rows(named=True):
        state, reasons = row["state"], row["reasons"] or []
        text = f"node {state}" + (f": {'; '.join(reasons)}" if reasons else "")
        t = row["start"].timestamp()
        yield LogEntry(t, row["node"], state, text, state_severity(state), verdict=state)


def _event_entries(frame: pl.DataFrame, since: float, until: float) -> Iterable[LogEntry]:
    for row in _window(frame, "ts", since, until).iter_rows(named=True):
        record = EventRecord(
            row["ts"].timestamp(),
            row["node"],
            row["kind"],
            row["gpu"],
            row["uuid"],
            row["code"],
            row["detail"] or "",
        )
        yield event_entry(record)


def _probe_entries(frame: pl.DataFrame, since: float, until: float) -> Iterable[LogEntry]:
    if frame.is_empty():
        return
    judged = _window(frame, "ts", since, until).filter(pl.col("gpu").is_not_null())
    runs = judged.group_by("ts", "node", "suite", "gpu").agg(pl.col("gpu_verdict").first())
    for row in runs.sort("ts").iter_rows(named=True):
        verdict = row["gpu_verdict"] or "unjudged"
        text = f"GPU {row['gpu']}: probe {row['suite']}: {verdict}"
        severity: Severity = "good" if verdict == "pass" else "bad" if verdict == "fail" else "warn"
        t = row["ts"].timestamp()
        yield LogEntry(t, row["node"], "probe", text, severity, row["gpu"], verdict)
