"""A repair as one line of the event log: the whole story from detection to healthy."""

from __future__ import annotations

from ledger.repairs.model import RepairRecord

HOUR_MS = 3_600_000


def _after(ms: int | None) -> str:
    if ms is None:
        return "?"
    minutes = ms / 60_000
    return f"{minutes:.0f} min" if minutes < 120 else f"{ms / HOUR_MS:.1f} h"


def repair_line(record: RepairRecord) -> str:
    """``gpu-a GPU 3: gpu_xid, acked +30 min (T-1), gpu_swap +3.9 h, healthy +4.0 h``."""
    where = record.node + (f" GPU {','.join(map(str, record.gpus))}" if record.gpus else "")
    parts = [f"{where}: {record.failure_class}"]
    if record.ack is not None:
        ticket = record.ack.ticket or "no ticket"
        parts.append(f"acked +{_after(record.time_to_ack_ms)} ({ticket})")
    first = record.first_action
    if first is not None:
        parts.append(f"{first.kind} +{_after(record.time_to_action_ms)}")
    if record.resolved_ms is None:
        parts.append("still broken")
    else:
        parts.append(f"healthy +{_after(record.time_to_repair_ms)}")
    return ", ".join(parts)
