"""Month-to-date ledger figures of a running fleet: repairs and delivery, refreshed off the
tick on the SLA summary's schedule.

Each refresh reads the month's history from disk (what ``gpufleet report`` reads), so it
runs on a thread; the last result is kept and handed out as it is: the ``/metrics``
families, the node screen's repair history, and one event-log line for each repair that
resolved since the previous refresh.

The delivery families are month-to-date gauges and refresh on their own, slower
schedule (:data:`DELIVERY_REFRESH_S`) from a month kept between refreshes
(``ledger.delivery.month``: each closed hour judged once): judging the whole month
every 30 s cost about 2 s of CPU per hour of a 1,000-node fleet's history.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.event_log import LogEntry
from fleet.settings.contract_section import ContractSection
from ledger.delivery.section import EnergySection
from ledger.repairs.ledger import RepairsLedger
from ledger.repairs.model import RepairRecord

if TYPE_CHECKING:
    from ledger.delivery.month import DeliveryMonth

log = logging.getLogger(__name__)

# The delivery families' own schedule: the open hour is judged again at each refresh
# (up to ~2 s of CPU at 1,000 nodes), so every 5 minutes keeps it near 0.3 % of a core.
DELIVERY_REFRESH_S = 300.0


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


@dataclass
class DeliveryFigures:
    """The delivery families of the month, kept between refreshes and made again on
    their own schedule."""

    month: DeliveryMonth | None = None
    text: str = ""
    made_at: float = float("-inf")

    def families(
        self, data_dir: Path, contract: ContractSection, energy: EnergySection, now: float
    ) -> str:
        """The families as of the last time they were due (now, when they are)."""
        if now - self.made_at < DELIVERY_REFRESH_S:
            return self.text
        from exporter.delivery_families import render_delivery
        from history.reader import HistoryReader
        from ledger.delivery.ledger import period_of
        from ledger.delivery.month import DeliveryMonth

        if self.month is None:
            self.month = DeliveryMonth()
        start_ms, now_ms = round(month_start(now).timestamp() * 1000), round(now * 1000)
        led = self.month.build(
            HistoryReader(data_dir), period_of(start_ms, now_ms), contract, energy, now_ms
        )
        self.text, self.made_at = render_delivery(led), now
        return self.text


def compute_figures(
    data_dir: Path,
    contract: ContractSection | None,
    energy: EnergySection,
    now: float,
    delivery: DeliveryFigures | None = None,
) -> LedgerResult:
    """Both ledgers of the month up to ``now``, and their /metrics families. Each ledger
    that fails is logged and left out; the other still counts. With ``delivery`` the
    delivery families come from it (kept between refreshes, on their own schedule);
    without, the month is judged whole."""
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
        if delivery is not None:
            texts.append(delivery.families(data_dir, contract or ContractSection(), energy, now))
        else:
            start_ms, now_ms = round(start.timestamp() * 1000), round(now * 1000)
            led = build_ledger(
                HistoryReader(data_dir), period_of(start_ms, now_ms),
                contract or ContractSection(), energy, now_ms,
            )  # fmt: skip
            texts.append(render_delivery(led))
    except Exception:
        log.exception("delivery ledger failed")
    return LedgerResult(repairs, "".join(texts))


@dataclass
class LedgerFigures:
    """The latest result, and which repairs the event log has told about."""

    latest: LedgerResult = field(default_factory=LedgerResult)
    delivery: DeliveryFigures = field(default_factory=DeliveryFigures)
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
