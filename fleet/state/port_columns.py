"""Port counters as columns: deltas, rates, resets and saturation for the fleet at once.

Ingest only stages a sample's port rows (:meth:`PortColumns.stage`); before a snapshot
(or a new session's layout) :meth:`PortColumns.flush` turns every staged row of the
fleet into one matrix per field layout and advances every tracked counter with array
operations, with the rules of :class:`fleet.counters.Counter`:

- a missing reading (NaN) keeps the last good value and leaves delta and rate unknown;
- a value below the last one is a reset: the delta is the new value, the rate unknown;
- a value at or above the counter's ceiling is pegged: delta up to it, rate unknown.

Values are float64, so a counter beyond 2**53 (a 64-bit data counter after months at
full rate) loses its last digits; its rate stays right to 1e-16. Only rows whose link
state, error rates or fatal counters changed are handed back to their
:class:`~fleet.state.port.PortTrack` in Python: on a healthy fleet, almost none.
Samples staged twice for one node before a flush are applied in order (rounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from collectors.agent.fields import counter_bits
from fleet.counters import ceiling
from fleet.settings.health_section import HealthSection
from fleet.state.capacity import grown
from fleet.state.layout import FieldIndex, Row
from fleet.state.port_batch import RowBatch, RowPlan
from fleet.state.port_tick import PortFrozen

if TYPE_CHECKING:
    from fleet.state.port import PortTrack

IB_RATED = ("symbol_error", "port_rcv_errors", "port_xmit_discards")
IB_DATA = ("port_xmit_data", "port_rcv_data")
NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_errors")
NIC_RATED = ("", "rx_errors", "")  # in IB_RATED's places: rx_errors stands for rcv errors
FACTS_WIDTH = 7


def _unique(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


class PortColumns:
    """Every port's tracked counters and link readings, one row per port slot."""

    def __init__(self, cfg: HealthSection, capacity: int = 64) -> None:
        fatal = tuple(n for n in cfg.port_fatal_counters if n not in IB_RATED)
        self.ib_tracked = _unique(IB_RATED + IB_DATA + fatal)
        self.names = _unique(self.ib_tracked + NIC_COUNTERS)
        self.column = {name: i for i, name in enumerate(self.names)}
        self.fatal = tuple(self.column[n] for n in cfg.port_fatal_counters if n in self.column)
        self.fatal_hold_s = cfg.port_fatal_hold_s
        # A change of these values (an increment, or a reset) goes to the track in Python.
        self.watched = np.array(
            [self.column["symbol_error"], *self.fatal, *self._downed()], dtype=np.intp
        )
        self._plans: dict[tuple[tuple[str, ...], bool], RowPlan] = {}
        self._staged: list[
            tuple[Sequence[PortTrack], Sequence[Row], float, float, RowPlan | None, np.ndarray]
        ] = []
        self.used = 0
        self.flushes = 0  # flushes that applied rows: what a node's staged rows wait for
        self._allocate_arrays(capacity)

    def _downed(self) -> list[int]:
        col = self.column.get("link_downed")
        return [] if col is None else [col]

    # -- slots and layouts -------------------------------------------------------------

    def _allocate_arrays(self, capacity: int) -> None:
        width = len(self.names)
        self.last = np.full((capacity, width), np.nan)  # last good value
        self.last_at = np.full((capacity, width), np.nan)
        self.delta = np.full((capacity, width), np.nan)  # NaN: unknown
        self.rate = np.full((capacity, width), np.nan)
        self.total = np.zeros((capacity, width))
        self.top = np.full((capacity, width), np.inf)  # the pegged value
        self.saturated = np.zeros((capacity, width), dtype=bool)
        self.tracked = np.zeros((capacity, width), dtype=bool)
        self.seen = np.full((capacity, FACTS_WIDTH), np.nan)  # what each port's facts hold
        self.applied = np.zeros(capacity, dtype=bool)

    def allocate(self) -> int:
        """A fresh port slot."""
        if self.used == len(self.applied):
            old = (self.last, self.last_at, self.delta, self.rate, self.total, self.top)
            flags, seen, applied = (self.saturated, self.tracked), self.seen, self.applied
            self._allocate_arrays(grown(len(self.applied), self.used + 1))
            for new, kept in zip(
                (self.last, self.last_at, self.delta, self.rate, self.total, self.top),
                old,
                strict=True,
            ):
                new[: self.used] = kept
            self.saturated[: self.used], self.tracked[: self.used] = flags
            self.seen[: self.used], self.applied[: self.used] = seen, applied
        self.used += 1
        return self.used - 1

    def plan(self, index: FieldIndex, is_nic: bool) -> RowPlan:
        """The plan of a session's IB or NIC field list (shared by equal lists)."""
        key = (index.names, is_nic)
        plan = self._plans.get(key)
        if plan is None:
            names = NIC_COUNTERS if is_nic else self.ib_tracked
            plan = RowPlan(index, is_nic, {n: self.column[n] for n in names}, self.watched)
            self._plans[key] = plan
        return plan

    def configure(self, slot: int, plan: RowPlan, data_bits: int | None) -> None:
        """A new session layout for the port in ``slot``: baselines of kept counters stay.

        Rows of ``slot`` staged under the previous layout must be flushed first (the
        node does it once for all its ports: :attr:`flushes` tells it whether it must).
        """
        self.tracked[slot] = False
        self.tracked[slot, plan.dst] = True
        for col in plan.dst:
            top = ceiling(counter_bits(self.names[col], data_bits))
            self.top[slot, col] = np.inf if top is None else top

    # -- ingest ------------------------------------------------------------------------

    def stage(
        self,
        tracks: Sequence[PortTrack],
        rows: Sequence[Row],
        t: float,
        at: float,
        plan: RowPlan | None,
        slots: np.ndarray,
    ) -> None:
        """Keep one sample's rows of a node's ports (or NICs) until the next flush.

        ``plan``: the plan every one of ``tracks`` has (None when they differ);
        ``slots``: their port slots, in order.
        """
        if rows:
            self._staged.append((tracks, rows, t, at, plan, slots))

    def flush(self) -> None:
        """Apply every staged row: counters with array operations, changed links in Python."""
        staged, self._staged = self._staged, []
        if not staged:
            return
        self.flushes += 1
        rounds: list[dict[RowPlan, RowBatch]] = []
        seen: dict[int, int] = {}
        for tracks, rows, t, at, plan, slots in staged:
            key = id(tracks)
            turn = seen.get(key, 0)  # a node's second sample: the next round
            seen[key] = turn + 1
            if turn == len(rounds):
                rounds.append({})
            groups = rounds[turn]
            if plan is not None:  # the usual case: the node's rows at once
                batch = groups.get(plan)
                if batch is None:
                    batch = groups[plan] = RowBatch()
                if len(rows) == len(tracks):  # the usual case: no slices to make
                    batch.add(tracks, rows, t, at, slots)
                    continue
                count = min(len(tracks), len(rows))  # the node keeps the rows (NodeTrack)
                batch.add(tracks[:count], rows[:count], t, at, slots[:count])
                continue
            for track, row in zip(tracks, rows, strict=False):
                batch = groups.get(track.plan)
                if batch is None:
                    batch = groups[track.plan] = RowBatch()
                batch.add((track,), (row,), t, at, np.array([track.slot], dtype=np.intp))
        for groups in rounds:
            for plan, batch in groups.items():
                self._apply(plan, batch)

    def _apply(self, plan: RowPlan, batch: RowBatch) -> None:
        tracks = batch.tracks
        slots = batch.slot_array()
        matrix = plan.matrix(batch.rows)
        moved = np.zeros(len(tracks), dtype=bool)
        if plan.dst.size:
            moved = self._advance(slots, plan, matrix[:, plan.src], batch.time_array())
        view = self._facts_view(plan, slots, matrix)
        changed = np.flatnonzero(self._changed(slots, view) | moved).tolist()
        if changed:
            received = batch.received_array().tolist()
            for i in changed:
                tracks[i].absorb(self, view[i], received[i])

    def _advance(
        self, slots: np.ndarray, plan: RowPlan, values: np.ndarray, t: np.ndarray
    ) -> np.ndarray:
        """Advance the counters ``plan.dst`` of ``slots``; True where a watched value moved."""
        cols = plan.cols
        at = (slots, cols) if isinstance(cols, slice) else (slots[:, None], cols[None, :])
        value = np.trunc(values)  # counters are integers: 3.7 counts as 3
        prev, prev_at, top = self.last[at], self.last_at[at], self.top[at]
        with np.errstate(invalid="ignore"):
            elapsed = t[:, None] - prev_at
            # The usual flush: every value read, at or above the last one (NaN compares
            # False), below its ceiling, time moved on: the rules below in fewer passes.
            usual = (value >= prev) & (value < top) & (elapsed > 0)
        if usual.all():
            delta = value - prev
            self.delta[at], self.rate[at] = delta, delta / elapsed
            self.total[at] += delta
            self.saturated[at] = False
            self.last[at], self.last_at[at] = value, t[:, None]
            return (value != prev)[:, plan.watched].any(axis=1)
        present = ~np.isnan(value)
        compared = present & ~np.isnan(prev) & ~np.isnan(prev_at)
        with np.errstate(invalid="ignore"):
            pegged = present & (value >= top)
            reset = compared & (value < prev)
            delta = np.where(reset, value, value - prev)
            timed = compared & ~reset & ~pegged & (elapsed > 0)
            rate = np.where(timed, delta / np.where(timed, elapsed, 1.0), np.nan)
            moved = present & (value != prev)  # an increment, a reset, or a first reading
        self.delta[at] = np.where(present, np.where(compared, delta, np.nan), np.nan)
        self.rate[at] = rate
        self.total[at] += np.where(compared, delta, 0.0)
        self.saturated[at] = np.where(present, pegged, self.saturated[at])
        self.last[at] = np.where(present, value, prev)
        self.last_at[at] = np.where(present, t[:, None], prev_at)
        return moved[:, plan.watched].any(axis=1)

    def _facts_view(self, plan: RowPlan, slots: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        """Per row what the port's facts hold: link readings, error rates, symbol pegged.

        Columns: IB state, phys_state, rate_gbps (NIC up, speed_mbps), then the rates of
        symbol_error, port_rcv_errors (NIC rx_errors), port_xmit_discards, and 1.0 when
        symbol_error is pegged. NaN where unknown or not sent.
        """
        view = np.full((len(slots), FACTS_WIDTH), np.nan)
        for k, position in enumerate(plan.links):
            if position >= 0:
                view[:, k] = matrix[:, position]
        rated = NIC_RATED if plan.is_nic else IB_RATED
        for k, name in enumerate(rated):
            if name:
                col = self.column[name]
                view[:, 3 + k] = np.where(self.tracked[slots, col], self.rate[slots, col], np.nan)
        if not plan.is_nic:
            col = self.column["symbol_error"]
            pegged = self.saturated[slots, col] & self.tracked[slots, col]
            view[:, 6] = pegged
        return view

    def _changed(self, slots: np.ndarray, view: np.ndarray) -> np.ndarray:
        """Rows whose facts view differs from what the track last absorbed."""
        before = self.seen[slots]
        same = (before == view) | (np.isnan(before) & np.isnan(view))
        self.seen[slots] = view
        changed = ~same.all(axis=1) | ~self.applied[slots]
        self.applied[slots] = True
        return changed

    def freeze(self) -> PortFrozen:
        """This tick's rates and totals, copied for the snapshot's lazy PortSnapshots."""
        used = self.used
        return PortFrozen(
            self.column,
            self.rate[:used].copy(),
            self.total[:used].copy(),
            self.tracked[:used].copy(),
        )

    # -- reading -----------------------------------------------------------------------

    def value_of(self, slot: int, name: str) -> int | None:
        """The counter's last good reading (None: none yet, or not sent)."""
        col = self.column.get(name)
        if col is None or not self.tracked[slot, col]:
            return None
        value = self.last[slot, col]
        return None if value != value else int(value)

    def delta_of(self, slot: int, name: str) -> int | None:
        """Increments at the last reading (None: unknown)."""
        col = self.column.get(name)
        if col is None or not self.tracked[slot, col]:
            return None
        value = self.delta[slot, col]
        return None if value != value else int(value)
