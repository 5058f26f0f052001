"""Repair records for the SLA evidence bundle: each counted outage with its repair.

The SLA ledger's outages and the repairs ledger's records come from the same
``node_states`` intervals; an outage's repair is the record of the same node whose
span overlaps it (a repair may span several counted outages across a restart).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleet.settings.contract_section import ContractSection
from history.reader import HistoryReader
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
    reader: HistoryReader | None = None,
) -> list[dict[str, Any] | None]:
    """For each outage ``(node, start_ms, end_ms)``, its repair record as JSON (or None)."""
    records = compute(data_dir, start, end, contract, reader).records
    out: list[dict[str, Any] | None] = []
    for node, start_ms, end_ms in outages:
        record = repair_for(records, node, start_ms, end_ms)
        out.append(None if record is None else record_json(record))
    return out


def _iso_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def repairs_evidence(
    data_dir: Path,
    start_ms: int,
    end_ms: int,
    outages: Sequence[dict[str, Any]],
    reader: HistoryReader | None = None,
) -> bytes:
    """``evidence/repairs.json`` of the SLA bundle: each listed outage (``node``,
    ``start``, ``end`` as the claim's JSON writes them) with its repair record or null."""
    start = datetime.fromtimestamp(start_ms / 1000, UTC)
    end = datetime.fromtimestamp(end_ms / 1000, UTC)
    spans = [(str(o["node"]), _iso_ms(str(o["start"])), _iso_ms(str(o["end"]))) for o in outages]
    repairs = bundle_repairs(data_dir, start, end, None, spans, reader)
    rows = [
        {"node": o["node"], "start": o["start"], "end": o["end"], "repair": repair}
        for o, repair in zip(outages, repairs, strict=True)
    ]
    return (json.dumps(rows, indent=2) + "\n").encode()
