"""The SLA header of an attached view: every shard's ledger, judged as one fleet.

The SLA is not a sum of the shards' SLAs: committed slots, mass losses and the
fleet's monitored time are fleet-wide. So each shard answers ``ledger`` requests with
what its history holds for the month (coverage and node intervals, plus the [sla]
contract from its configuration) and the viewer runs the same math ``gpufleet sla``
runs over ``DATA/shard=K`` (per-node coverage: ``cluster.node_coverage``). A
shard that stops answering keeps its last ledger: its coverage ends there, so its
nodes' minutes after that are unmonitored, not down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Annotated

import msgspec
import nats.errors
import pydantic

from cluster.chunked import Ask, ChunkError, fetch_chunked
from cluster.node_coverage import (
    ShardHistory,
    fleet_coverage,
    intervals_across_shards,
    shard_gaps,
)
from cluster.wire import encode, request_subject
from fleet.model import SlaSummary
from history.ledger import LedgerInputs, last_observation_ms
from history.states import RecordedState, StateInterval
from ledger.sla.period import month_of, month_period
from ledger.sla.section import SlaSection

log = logging.getLogger(__name__)


# Monitored time before the month's first figure: one refresh, as a collector's first
# figure (at its start, no coverage) is followed by its next (gpufleet.runtime).
FIRST_FIGURE_MS = 30_000

# Unix milliseconds up to the last day a date can hold (9999-12-31).
UnixMs = Annotated[int, msgspec.Meta(ge=0, le=253_402_300_799_999)]


class LedgerRequest(msgspec.Struct, array_like=True, frozen=True):
    """A shard's ledger for the time from ``start_ms`` to ``end_ms``."""

    start_ms: UnixMs
    end_ms: UnixMs


class IntervalRow(msgspec.Struct, array_like=True, frozen=True):
    """One node state interval (``end_ms`` None while open)."""

    node: str
    state: RecordedState
    start_ms: int
    end_ms: int | None
    reasons: tuple[str, ...] = ()


class ShardLedger(msgspec.Struct, array_like=True, frozen=True):
    """What one shard's history says about a period, and the contract it was given."""

    shard: int
    contract: str | None  # the [sla] table as JSON; None where it is not configured
    coverage: tuple[tuple[int, int], ...]
    intervals: tuple[IntervalRow, ...]
    live: bool


_LEDGER = msgspec.msgpack.Decoder(ShardLedger)
# A shard that is gone, slow or talking nonsense (OSError covers timeouts).
UNANSWERED = (OSError, nats.errors.Error, ChunkError, msgspec.DecodeError, msgspec.ValidationError)


def ledger_request(now: float) -> LedgerRequest:
    """The request for the month to date of ``now``."""
    period = month_period(month_of(round(now * 1000)))
    return LedgerRequest(period.start_ms, period.month_end_ms)


def shard_ledger(
    shard: int, inputs: LedgerInputs, contract: SlaSection | None, asked: LedgerRequest
) -> ShardLedger:
    """The part of ``inputs`` that touches the asked period, as the shard sends it."""
    lo, hi = asked.start_ms, asked.end_ms
    rows = tuple(
        IntervalRow(i.node, i.state, i.start_ms, i.end_ms, i.reasons)
        for i in inputs.intervals
        if i.start_ms < hi and (i.end_ms is None or i.end_ms > lo)
    )
    spans = tuple((s, e) for s, e in inputs.coverage if s < hi and e > lo)
    text = None if contract is None else contract.model_dump_json()
    return ShardLedger(shard, text, spans, rows, inputs.live)


def decode_ledger(data: bytes) -> ShardLedger:
    """A shard's ledger from the bus (every field checked).

    Raises:
        msgspec.DecodeError, msgspec.ValidationError: not a ledger.
    """
    return _LEDGER.decode(data)


class FleetSla:
    """The newest ledger of every shard, and the fleet's month to date from them."""

    def __init__(self, first_figure_ms: int = FIRST_FIGURE_MS) -> None:
        self._first_figure_ms = first_figure_ms  # monitored time before the first figure
        self.latest: SlaSummary | None = None  # as of the last refresh
        self.ledgers: dict[int, ShardLedger] = {}
        self._fresh: set[int] = set()
        self._contracts: dict[str, SlaSection | None] = {}
        self.count: int | None = None  # N of the shards' "K/N" (from their summaries)
        self._answered: dict[int, int] = {}  # when each shard's ledger came, unix ms

    def take(self, ledger: ShardLedger, at: float | None = None) -> None:
        """A shard answered (at unix time ``at``): its ledger replaces the one it sent
        before."""
        self.ledgers[ledger.shard] = ledger
        self._fresh.add(ledger.shard)
        if at is not None:
            self._answered[ledger.shard] = round(at * 1000)

    async def refresh(self, ask: Ask, shards: Iterable[int], now: float) -> SlaSummary | None:
        """Ask every shard for its ledger, then judge the fleet (off the event loop).

        Args:
            ask: one request/reply round trip to a shard.
            shards: the shards heard of (those answered before are asked too).
            now: unix time.
        """
        payload = encode(ledger_request(now))
        for k in sorted(set(shards) | set(self.ledgers)):
            try:
                data = await fetch_chunked(
                    ask, request_subject(k, "ledger"), request_subject(k, "chunk"), payload
                )
                ledger = decode_ledger(data)
            except UNANSWERED as exc:
                log.info("shard %d sent no ledger: %s", k, exc)
                self.missed(k)
                continue
            if ledger.shard != k:
                log.warning("shard %d answered with the ledger of shard %d", k, ledger.shard)
                self.missed(k)
                continue
            self.take(ledger, now)
        self.latest = await asyncio.to_thread(self.summary, now)
        return self.latest

    def missed(self, shard: int) -> None:
        """A shard did not answer: its last ledger stands, no longer live."""
        self._fresh.discard(shard)

    def contract(self) -> SlaSection | None:
        """The contract of the lowest-numbered shard that has one."""
        for _, ledger in sorted(self.ledgers.items()):
            if ledger.contract is not None:
                return self._parse(ledger.contract)
        return None

    def _parse(self, text: str) -> SlaSection | None:
        if text not in self._contracts:
            try:
                self._contracts[text] = SlaSection.model_validate_json(text)
            except pydantic.ValidationError as exc:
                log.warning("a shard sent an [sla] contract that does not validate: %s", exc)
                self._contracts[text] = None
        return self._contracts[text]

    def inputs(self) -> LedgerInputs:
        """The fleet's ledger inputs: per-node coverage across every shard heard."""
        shards = [
            ShardHistory(
                f"shard={k}",
                self._coverage(k, ledger),
                [_interval(row) for row in ledger.intervals],
            )
            for k, ledger in sorted(self.ledgers.items())
        ]
        coverage = fleet_coverage(shards)
        live = bool(self.ledgers) and all(
            ledger.live and k in self._fresh for k, ledger in self.ledgers.items()
        )
        return LedgerInputs(
            coverage=coverage,
            intervals=intervals_across_shards(shards, self.count),
            gaps=shard_gaps(shards, self.count),
            live=live,
            observed_until_ms=last_observation_ms(coverage),
        )

    def _coverage(self, k: int, ledger: ShardLedger) -> list[tuple[int, int]]:
        """The shard's coverage; a live shard that answered this round observed until it
        answered (its books close spans only when they flush: without this, every live
        shard but the latest to flush would look silent for its last few seconds)."""
        spans = [(s, e) for s, e in ledger.coverage]
        answered = self._answered.get(k)
        if spans and ledger.live and k in self._fresh and answered is not None:
            end = max(e for _, e in spans)
            if answered > end:
                spans.append((end, answered))
        return spans

    def summary(self, now: float) -> SlaSummary | None:
        """The header's month to date, or None without a contract or a ledger.

        "Not measured" until the shards have monitored the month for one refresh
        period: a collector shows its first figure when it starts, with no coverage
        yet, and its next one a refresh later. A viewer attached to shards that started a
        second ago would otherwise judge that second, when no node has reported yet and
        every committed slot never seen counts as down: "0.000 %".
        """
        from ledger.sla.summary import sla_summary

        contract = self.contract()
        if contract is None or not self.ledgers:
            return None
        inputs = self.inputs()
        if sum(e - s for s, e in inputs.coverage) < self._first_figure_ms:
            inputs = replace(inputs, coverage=[], observed_until_ms=None)
        return sla_summary(inputs, contract, now)


def _interval(row: IntervalRow) -> StateInterval:
    return StateInterval(row.node, row.state, row.start_ms, row.end_ms, row.reasons)
