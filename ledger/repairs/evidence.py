"""What the repairs ledger reads: outages, events and acknowledgements of a history.

Everything comes through ``history.reader.HistoryReader`` except the operator's
acknowledgements, which the desk keeps in ``acknowledged.json`` beside the tables. That
file is written by this program but lives on disk where anything may change it, so each
row is checked and bounded; a bad row is skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from history.reader import HistoryReader
from history.states import StateInterval
from ledger.repairs.model import Ack

log = logging.getLogger(__name__)

ACKS_FILE = "acknowledged.json"  # fleet.alerts.ACKS_FILE, the acknowledgements standing now
ACKS_JOURNAL = "acknowledgements.jsonl"  # every acknowledgement made, kept after it is lifted
_TEXT_MAX = 200
_ACKS_MAX = 100_000


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded event, as the repairs ledger uses it."""

    at_ms: int
    node: str
    gpu: int | None
    uuid: str | None
    kind: str
    code: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything one computation of the ledger reads, in time order."""

    intervals: tuple[StateInterval, ...]
    events: tuple[Event, ...]
    acks: tuple[Ack, ...]
    end_ms: int  # where observation of the period ends: nothing is extended past it


def read_evidence(
    data_dir: Path, first: date, last: date, end_ms: int, reader: HistoryReader | None = None
) -> Evidence:
    """The outages, events and acknowledgements recorded up to ``last`` (and ``end_ms``),
    through ``reader`` when a report already holds one (its tables are read once)."""
    reader = reader or HistoryReader(data_dir)
    # Through the day after ``last``, as the SLA ledger asks for them (the reader then
    # reads the table once for both): those starting at or after end_ms are left out.
    later = last + timedelta(days=1)
    intervals = tuple(i for i in reader.intervals(later) if i.start_ms < end_ms)
    events = tuple(_events(reader.events(first, last), end_ms))
    return Evidence(intervals, events, tuple(read_acks(data_dir)), end_ms)


def _events(frame: pl.DataFrame, end_ms: int) -> list[Event]:
    ms = frame.select(pl.col("ts").dt.epoch("ms")).to_series().to_list()
    out = []
    for t, row in zip(ms, frame.iter_rows(named=True), strict=True):
        if t is None or t >= end_ms or row["node"] is None:
            continue
        out.append(
            Event(
                int(t),
                row["node"],
                row["gpu"],
                row["uuid"],
                row["kind"] or "",
                row["code"],
                (row["detail"] or "")[:_TEXT_MAX],
            )
        )
    return sorted(out, key=lambda e: (e.at_ms, e.node, e.gpu if e.gpu is not None else -1))


def read_acks(data_dir: Path) -> list[Ack]:
    """The operator's acknowledgements, oldest first: those standing
    (``acknowledged.json``) and those ever made (``acknowledgements.jsonl``, one JSON
    object a line, where the desk keeps that journal), the same one counted once."""
    acks = {(a.node, a.gpu, a.at_ms): a for a in _journal(data_dir / ACKS_JOURNAL)}
    acks.update({(a.node, a.gpu, a.at_ms): a for a in _standing(data_dir / ACKS_FILE)})
    return sorted(acks.values(), key=lambda a: (a.at_ms, a.node))


def _journal(path: Path) -> list[Ack]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = [line for _, line in zip(range(_ACKS_MAX), handle, strict=False)]
    except OSError:
        return []
    acks = []
    for line in lines:
        try:
            row = json.loads(line[:4096])
        except ValueError:
            continue
        if (ack := _ack(row)) is not None:
            acks.append(ack)
    return acks


def _standing(path: Path) -> list[Ack]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable acknowledgements %s: %s", path, exc)
        return []
    if not isinstance(rows, list):
        return []
    return [ack for row in rows[:_ACKS_MAX] if (ack := _ack(row)) is not None]


def _ack(row: object) -> Ack | None:
    if not isinstance(row, dict):
        return None
    node, gpu, at = row.get("node"), row.get("gpu"), row.get("at")
    note, ticket = row.get("note", ""), row.get("ticket")
    if not isinstance(node, str) or not isinstance(at, int | float) or isinstance(at, bool):
        return None
    if gpu is not None and not (isinstance(gpu, int) and 0 <= gpu <= 65_535):
        return None
    if not 0 <= at < 253_402_300_800:  # a datetime's range, in seconds
        return None
    return Ack(
        node[:_TEXT_MAX],
        gpu,
        round(at * 1000),
        note[:_TEXT_MAX] if isinstance(note, str) else "",
        ticket[:_TEXT_MAX] if isinstance(ticket, str) and ticket.strip() else None,
    )
