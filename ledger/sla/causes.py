"""Each outage's cause as an RMA desk asks for it: the event, the GPU, the board's identity.

An RMA desk's first questions are which event (an XID, an ECC error, a link going down),
on which GPU, and which board (UUID, serial, PCI bus id). The cause of an outage is the
first hardware event of its node within ``EVIDENCE_TOLERANCE_MS`` of its start (the
driver logs the event before the next tick judges the node), or failing that the first
one during it, which explains it without having started it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import polars as pl

from ledger.sla.report import EVIDENCE_TOLERANCE_MS, SlaReport, iso

CAUSAL_PREFIXES = ("xid", "gpu_lost", "ecc", "link_", "nvlink")
AROUND_MS = 5 * 60_000  # the cause's GPU's minutes listed before and after it
SAMPLE_COLUMNS = ("util_mean", "power_mean_w", "temp_max_c", "verdict", "samples")
NOT_RECORDED = "not recorded by this history"


def causal(kind: str) -> bool:
    """Whether an event of ``kind`` is hardware evidence (not a connection attempt)."""
    return kind.startswith(CAUSAL_PREFIXES)


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def pick_cause(outage: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(the causal event, ``started`` or ``during``) of an outage's JSON form, or (None, "")."""
    start = _ms(outage["start"])
    found = [e for e in outage["evidence"] if causal(e["kind"])]
    for event in found:
        if abs(_ms(event["ts"]) - start) <= EVIDENCE_TOLERANCE_MS:
            return event, "started"
    for event in found:
        if _ms(event["ts"]) > start:
            return event, "during"
    return None, ""


def gpu_identities(rollups: pl.DataFrame) -> dict[tuple[str, int], dict[str, Any]]:
    """(node, GPU index) -> the board's identity, as the history recorded it last.

    The serial and PCI bus id are read where the history recorded them; otherwise they
    are None and ``missing`` says so, rather than looking like an empty value.
    """
    columns = [c for c in ("serial", "pci_bus_id") if c in rollups.columns]
    rows = rollups.sort("ts").group_by("node", "gpu", maintain_order=True).last()
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows.iter_rows(named=True):
        identity: dict[str, Any] = {"index": row["gpu"], "uuid": row["uuid"]}
        for name in ("serial", "pci_bus_id"):
            identity[name] = row[name] if name in columns else None
        # A column an older history lacks reads as null: not recorded either way.
        missing = [n for n in ("serial", "pci_bus_id") if identity[n] is None]
        if missing:
            identity["missing"] = f"{', '.join(missing)}: {NOT_RECORDED}"
        out[(row["node"], int(row["gpu"]))] = identity
    return out


def gpu_minutes_around(
    rollups: pl.DataFrame, node: str, gpu: int, at_ms: int
) -> list[dict[str, Any]]:
    """The GPU's recorded minutes from 5 minutes before ``at_ms`` to 5 after it."""
    ts = pl.col("ts").dt.epoch("ms")
    rows = rollups.filter(
        (pl.col("node") == node) & (pl.col("gpu") == gpu)
        & ts.is_between(at_ms - AROUND_MS, at_ms + AROUND_MS)
    ).sort("ts")  # fmt: skip
    return [
        {"minute": iso(round(r["ts"].timestamp() * 1000)), **{c: r[c] for c in SAMPLE_COLUMNS}}
        for r in rows.iter_rows(named=True)
    ]


def outage_causes(report: SlaReport, data: dict[str, Any], rollups: pl.DataFrame) -> bytes:
    """``evidence/causes.json``: per outage, its causal event and the GPU it names."""
    identities = gpu_identities(rollups)
    listed = [
        (kind, o)
        for kind, key in (("counted", "outages"), ("forgiven", "forgiven_outages"),
                          ("disputed", "disputed"))
        for o in data[key]
    ]  # fmt: skip
    out = []
    for kind, outage in listed:
        event, relation = pick_cause(outage)
        gpu = None
        samples: list[dict[str, Any]] = []
        if event is not None and event["gpu"] is not None:
            at = _ms(event["ts"])
            samples = gpu_minutes_around(rollups, outage["node"], int(event["gpu"]), at)
            gpu = identities.get((outage["node"], int(event["gpu"])))
            if gpu is None:  # no minute of that GPU was recorded; the event's own UUID
                gpu = {
                    "index": event["gpu"],
                    "uuid": event.get("uuid"),
                    "serial": None,
                    "pci_bus_id": None,
                    "missing": f"serial, pci_bus_id: {NOT_RECORDED}",
                }
        out.append({
            "kind": kind, "node": outage["node"], "resource_id": outage["resource_id"],
            "start": outage["start"], "end": outage["end"], "cause": event,
            "cause_relation": relation or None, "gpu": gpu, "gpu_minutes_around_cause": samples,
            "node_gpus": [v for (n, _), v in sorted(identities.items()) if n == outage["node"]],
        })  # fmt: skip
    body = {
        "tolerance_seconds": EVIDENCE_TOLERANCE_MS / 1000,
        "period": {"start": iso(report.result.period.start_ms),
                   "end": iso(report.result.period.end_ms)},
        "outages": out,
    }  # fmt: skip
    return (json.dumps(body, indent=2) + "\n").encode()
