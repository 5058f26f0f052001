"""Month-to-date ledger figures of a running fleet: repairs and delivery, refreshed off the
tick on the SLA summary's schedule.

Each refresh reads the month's history from disk (what ``gpufleet report`` reads), so it
runs on a thread; the last result is kept and handed out as it is: the ``/metrics``
families, the node screen's repair history, and one event-log line for each repair that
resolved since the previous refresh.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from fleet.event_log import LogEntry
from fleet.settings.contract_section import ContractSection
from ledger.delivery.section import EnergySection
from ledger.repairs.ledger import RepairsLedger
from ledger.repairs.model import RepairRecord

log = logging.getLogger(__name__)


def month_start(now: float) -> datetime:
    """Midnight UTC of the first day of ``now``'s month (the ledgers' period start)."""
    t = datetime.fromtimestamp(now, UTC)
    return t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def iso_minute(ms: int) -> str:
    """``2026-03-14 09:05Z``: a repair's moment as the node screen shows it."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%MZ")


@dataclass(frozen=True, slots=True)
class LedgerResult:
    """One refresh: the ledgers (None where one could not be computed) and their text."""

    repairs: RepairsLedger | None = None
    families: str = ""


def compute_figures(
    data_dir: Path, contract: ContractSection | None, energy: EnergySection, now: float
) -> LedgerResult:
    """Both ledgers of the month up to ``now``, and their /metrics families. Each ledger
    that fails is logged and left out; the other still counts."""
    from exporter.delivery_families import render_delivery
    from exporter.repair_families import render_repairs
    from history.reader import HistoryReader
    from ledger.delivery.ledger import build_ledger, period_of
    from ledger.repairs.ledger import compute

    start = month_start(now)
    end = datetime.fromtimestamp(now, UTC)
    texts: list[str] = []
    repairs = None
    try:
        repairs = compute(data_dir, start, end, contract)
        texts.append(render_repairs(repairs))
    except Exception:  # a damaged file must not stop the others' figures
        log.exception("repairs ledger failed")
    try:
        start_ms, now_ms = round(start.timestamp() * 1000), round(now * 1000)
        delivery = build_ledger(
            HistoryReader(data_dir), period_of(start_ms, now_ms),
            contract or ContractSection(), energy, now_ms,
        )  # fmt: skip
        texts.append(render_delivery(delivery))
    except Exception:
        log.exception("delivery ledger failed")
    return LedgerResult(repairs, "".join(texts))


@dataclass
class LedgerFigures:
    """The latest result, and which repairs the event log has told about."""

    latest: LedgerResult = field(default_factory=LedgerResult)
    _told: set[tuple[str, int]] | None = None  # None until the first refresh: history

    def update(self, result: LedgerResult) -> list[LogEntry]:
        """Keep ``result``; the event-log lines of repairs resolved since the last one.
        Repairs already resolved at the first refresh happened before this process."""
        self.latest = result
        if result.repairs is None:
            return []
        resolved = [r for r in result.repairs.records if r.resolved_ms is not None]
        keys = {(r.node, r.detected_ms) for r in resolved}
        if self._told is None:
            self._told = keys
            return []
        new = [r for r in resolved if (r.node, r.detected_ms) not in self._told]
        self._told |= keys
        return [repair_entry(r) for r in new]

    def repair_rows(self, node: str) -> tuple[list[RepairRecord], set[int], tuple[str, ...]]:
        """``node``'s repair records, the detected times of those that breached the
        contract, and the serials its GPUs had in them."""
        led = self.latest.repairs
        if led is None:
            return [], set(), ()
        records = [r for r in led.records if r.node == node]
        breached = {b.detected_ms for b in led.breaches if b.node == node}
        serials = tuple(dict.fromkeys(s for r in records for s in r.serials))
        return records, breached, serials


def repair_entry(record: RepairRecord) -> LogEntry:
    """A resolved repair as one event-log line: the whole story, detection to healthy."""
    from ledger.repairs.log_line import repair_line

    assert record.resolved_ms is not None
    return LogEntry(record.resolved_ms / 1000, record.node, "repair", repair_line(record))
