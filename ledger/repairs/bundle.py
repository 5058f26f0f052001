"""Repair records for the SLA evidence bundle: each counted outage with its repair.

The SLA ledger's outages and the repairs ledger's records come from the same
``node_states`` intervals; an outage's repair is the record of the same node whose
span overlaps it (a repair may span several counted outages across a restart).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from fleet.settings.contract_section import ContractSection
from ledger.repairs.ledger import compute
from ledger.repairs.model import RepairRecord
from ledger.repairs.render import record_json


def repair_for(
    records: Sequence[RepairRecord], node: str, start_ms: int, end_ms: int
) -> RepairRecord | None:
    """The repair record of ``node`` overlapping ``[start_ms, end_ms)``, if any."""
    for record in records:
        resolved = record.resolved_ms if record.resolved_ms is not None else end_ms
        if record.node == node and record.detected_ms < end_ms and start_ms < resolved + 1:
            return record
    return None


def bundle_repairs(
    data_dir: Path,
    start: datetime,
    end: datetime,
    contract: ContractSection | None,
    outages: Sequence[tuple[str, int, int]],
) -> list[dict[str, Any] | None]:
    """For each outage ``(node, start_ms, end_ms)``, its repair record as JSON (or None)."""
    records = compute(data_dir, start, end, contract).records
    out: list[dict[str, Any] | None] = []
    for node, start_ms, end_ms in outages:
        record = repair_for(records, node, start_ms, end_ms)
        out.append(None if record is None else record_json(record))
    return out
