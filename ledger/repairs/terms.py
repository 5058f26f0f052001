"""The contract's repair terms checked against the records (``[contract]``).

``repair_within_hours``: the clock starts when the fault was reported, i.e. the
operator's acknowledgement; a repair never acknowledged is timed from detection and
marked so (the renter could not have reported it earlier than that). An outage still
open at the end of the history is a breach once it is older than the term.

``fast_replacements_per_month``: the first N replacements (GPU swap or node
replacement) of each UTC month, by detection time, are owed within the term; later
replacements that month are not, and are not listed as breaches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

from fleet.settings.contract_section import ContractSection
from ledger.repairs.model import Breach, ClockStart, RepairRecord

HOUR_MS = 3_600_000
REPLACEMENTS = frozenset(("gpu_swap", "node_replaced"))


def breaches(
    records: Sequence[RepairRecord], contract: ContractSection | None, end_ms: int
) -> list[Breach]:
    """Repairs that took longer than the contract allows."""
    if contract is None or contract.repair_within_hours is None:
        return []
    allowed = round(contract.repair_within_hours * HOUR_MS)
    owed = contract.fast_replacements_per_month
    used: Counter[str] = Counter()
    out = []
    for record in records:
        month = datetime.fromtimestamp(record.detected_ms / 1000, UTC).strftime("%Y-%m")
        if owed is not None and record.kind in REPLACEMENTS:
            used[month] += 1
            if used[month] > owed:
                continue  # beyond the month's fast replacements: no term applies
        breach = _late(record, allowed, end_ms)
        if breach is not None:
            out.append(breach)
    return out


def _late(record: RepairRecord, allowed: int, end_ms: int) -> Breach | None:
    start = record.ack.at_ms if record.ack is not None else record.detected_ms
    clock: ClockStart = "acknowledged" if record.ack is not None else "detected"
    done = record.resolved_ms if record.resolved_ms is not None else end_ms
    took = done - start
    if took <= allowed:
        return None
    state = "repaired" if record.resolved_ms is not None else "still open"
    why = f"{state} after {took / HOUR_MS:.2f} h from {clock}; allowed {allowed / HOUR_MS:g} h"
    return Breach(record.node, record.detected_ms, clock, took, allowed, why)
