"""Node state intervals: opened and closed as nodes change state, kept per file.

An interval lives in ``node_states/date=<day of its start>/<session>.parquet``. When
it closes, the file it lives in is rewritten (atomically), even when an earlier
session wrote it: that is how a restart resumes intervals left open.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import polars as pl

from fleet.health.liveness import liveness_of
from fleet.model import FleetSnapshot, NodeSnapshot
from history.layout import NODE_STATES, SCHEMAS, day_of_ms

# Closed intervals older than this are no longer kept in memory (never rewritten again).
KEEP_CLOSED_DAYS = 62

# A broken interval keeps every cause seen while it held, up to this many: the lost GPU's
# sample and its XID 79 come from two threads of the agent and can fall a tick apart.
MAX_INTERVAL_REASONS = 24
# The figures of a reason that measure (a rate, a count, a total), not the ones that name
# (a GPU's index, an XID's code, a port): ``symbol_error 45/s``, ``7 of 8``, ``= 2``,
# ``+3``, ``(x4 within 60 s)``, ``12 retired pages``.
_MEASURES = re.compile(
    r"(?<=[=+] )\d+|(?<=\+)\d+|\(x\d+|\d+(?:\.\d+)?(?= ?(?:/s|Gb/s|s\b|of\b|rows|retired|links?\b))"
)

# What history records per node. ``unmonitored`` is the monitor's blindness, not the
# node's: no connection attempt of this controller run has concluded yet, or the
# controller could not observe the node for a reason of its own side (credentials,
# host key, agent or protocol trouble).
RecordedState = Literal["up", "broken", "unreachable", "unmonitored"]


def recorded_state(node: NodeSnapshot) -> RecordedState:
    """The state history records for ``node``: its own, except the monitor's blind spots.

    ``unreachable`` stays down only with positive evidence, as the liveness rule
    (:mod:`fleet.health.liveness`) judged it: a connection attempt of this run failed
    (timeout, refused, no route) or samples stopped on an open connection. A node the
    rule calls ``connecting`` (no sample yet) or ``unmonitored`` is the monitor's blindness.
    """
    if node.state != "unreachable":
        return node.state
    liveness = liveness_of(node.status, node.state, node.sampled_at is not None)
    return "unreachable" if liveness == "unreachable" else "unmonitored"


def _same_node_state(recorded: str, node: NodeSnapshot) -> bool:
    return recorded == node.state or (recorded == "unmonitored" and node.state == "unreachable")


@dataclass(slots=True)
class StateInterval:
    """A node was in ``state`` from ``start_ms`` until ``end_ms`` (None while open)."""

    node: str
    state: RecordedState
    start_ms: int
    end_ms: int | None
    reasons: tuple[str, ...] = ()
    resumed: bool = False  # left open by an earlier session
    file: str = ""  # the data-directory-relative file it is written to
    last_seen: tuple[str, ...] = ()  # the node's reasons when last merged (not written)


@dataclass(slots=True)
class NodeStateBook:
    """Every interval that may still change or matter this month, by the file it lives in."""

    session_file: str  # this session's file name inside each day partition
    files: dict[str, list[StateInterval]] = field(default_factory=dict)
    open: dict[str, StateInterval] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    resume_end_ms: int | None = None  # end of the previous sessions' coverage

    def adopt(self, relpath: str, rows: list[StateInterval]) -> None:
        """Take over the intervals of one existing file (on restart)."""
        self.files[relpath] = rows
        for interval in rows:
            interval.file = relpath
            if interval.end_ms is None:
                interval.resumed = True
                self._adopt_open(interval)

    def _adopt_open(self, interval: StateInterval) -> None:
        # Two open intervals of one node (a crash between two writes): the later one wins.
        other = self.open.get(interval.node)
        if other is not None:
            earlier, interval = sorted((other, interval), key=_start)
            earlier.end_ms = max(earlier.start_ms, interval.start_ms)
            self.dirty.add(earlier.file)
        self.open[interval.node] = interval

    def apply(self, snapshot: FleetSnapshot, *, blind: bool = False) -> None:
        """Make every node's open interval agree with the snapshot's recorded state.

        A node changes state at most once per snapshot, at ``state_since`` (the time of
        its transition); a change of recorded state within one node state (connecting,
        then a failed attempt) happens at the snapshot's time. While the controller is
        ``blind`` (stalled, settling, its network down) an unreachable node is
        unmonitored: the controller cannot tell whose fault it is.
        """
        now_ms = round(snapshot.taken_at * 1000)
        present = set()
        for node in snapshot.nodes:
            present.add(node.name)
            state = recorded_state(node)
            if blind and state == "unreachable":
                state = "unmonitored"
            current = self.open.get(node.name)
            if current is not None and current.state == state:
                if state == "broken" and node.broken_reasons != current.last_seen:
                    self._add_reasons(current, node.broken_reasons)
                continue
            since = snapshot.taken_at
            if node.state_since is not None and (
                current is None or not _same_node_state(current.state, node)
            ):
                since = node.state_since
            self._enter(node.name, state, round(since * 1000), node.broken_reasons)
        for name in [n for n in self.open if n not in present]:
            self._close(self.open.pop(name), now_ms)  # the node left the fleet

    def _enter(self, node: str, state: RecordedState, at_ms: int, reasons: Iterable[str]) -> None:
        current = self.open.get(node)
        if current is not None:
            if current.state == state:
                return
            at_ms = max(at_ms, self._close(current, at_ms))
        relpath = self._file_of_day(day_of_ms(at_ms))
        reasons = tuple(reasons)
        interval = StateInterval(node, state, at_ms, None, reasons, file=relpath, last_seen=reasons)
        self.files.setdefault(relpath, []).append(interval)
        self.open[node] = interval
        self.dirty.add(relpath)

    def _add_reasons(self, interval: StateInterval, reasons: tuple[str, ...]) -> None:
        """Add the causes that joined while ``interval`` held, one of each shape.

        A reason whose text differs from one already kept only in its figures (a rate, a
        count) is the same cause measured again; the first measure stays.
        """
        interval.last_seen = reasons
        shapes = {_shape(r) for r in interval.reasons}
        added = list(interval.reasons)
        for reason in reasons:
            if len(added) >= MAX_INTERVAL_REASONS:
                break
            if (shape := _shape(reason)) not in shapes:
                shapes.add(shape)
                added.append(reason)
        if len(added) > len(interval.reasons):
            interval.reasons = tuple(added)
            self.dirty.add(interval.file)

    def _close(self, interval: StateInterval, at_ms: int) -> int:
        if interval.resumed and self.resume_end_ms is not None:
            # What happened while nothing recorded is unknown: claim only what was seen.
            at_ms = min(at_ms, max(self.resume_end_ms, interval.start_ms))
        interval.end_ms = max(at_ms, interval.start_ms)
        self.dirty.add(interval.file)
        return interval.end_ms

    def _file_of_day(self, day: date) -> str:
        return f"{NODE_STATES}/date={day.isoformat()}/{self.session_file}"

    def intervals(self) -> list[StateInterval]:
        """Every interval held, in start order."""
        return sorted((r for rows in self.files.values() for r in rows), key=_start)

    def take_dirty(self) -> dict[str, pl.DataFrame]:
        """The files that changed since the last call, as frames to write."""
        frames = {relpath: to_frame(self.files[relpath]) for relpath in sorted(self.dirty)}
        self.dirty.clear()
        return frames

    def forget_before(self, day: date) -> None:
        """Drop files whose intervals are all closed and started before ``day``."""
        for relpath, rows in list(self.files.items()):
            old = all(r.end_ms is not None and day_of_ms(r.start_ms) < day for r in rows)
            if rows and old and relpath not in self.dirty:
                del self.files[relpath]

    def open_days(self) -> set[date]:
        """Start days of the intervals still open (their partitions must be kept)."""
        return {day_of_ms(i.start_ms) for i in self.open.values()}


def to_frame(rows: Iterable[StateInterval]) -> pl.DataFrame:
    """Intervals as ``node_states`` rows."""
    rows = list(rows)
    return pl.DataFrame(
        {
            "node": [r.node for r in rows],
            "state": [r.state for r in rows],
            "start": [r.start_ms for r in rows],
            "end": [r.end_ms for r in rows],
            "reasons": [list(r.reasons) for r in rows],
        },
        schema={**SCHEMAS[NODE_STATES], "start": pl.Int64(), "end": pl.Int64()},
    ).cast(SCHEMAS[NODE_STATES])  # type: ignore[arg-type]


def from_frame(frame: pl.DataFrame) -> list[StateInterval]:
    """``node_states`` rows as intervals."""
    return [
        StateInterval(
            r["node"], r["state"], _ms(r["start"]), _ms_or_none(r["end"]), tuple(r["reasons"] or ())
        )
        for r in frame.iter_rows(named=True)
    ]


def relpath_of(data_dir: Path, path: Path) -> str:
    """``path`` relative to the data directory, as the book names files."""
    return path.relative_to(data_dir).as_posix()


def _shape(reason: str) -> str:
    return _MEASURES.sub("#", reason)


def _start(interval: StateInterval) -> int:
    return interval.start_ms


def _ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


def _ms_or_none(value: datetime | None) -> int | None:
    return None if value is None else _ms(value)
