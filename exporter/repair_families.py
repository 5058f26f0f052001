"""Repair and failure families for ``/metrics``, from the repairs ledger of the month.

Computed off the tick (the ledger reads history on a thread, as the SLA summary does)
and rendered at scrape time from the last result. Labels are bounded: nodes, the five
failure classes and the six repair kinds; no serial or ticket becomes a label.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from exporter.families import family_text, gauge
from ledger.repairs.ledger import RepairsLedger
from ledger.repairs.model import FAILURE_CLASSES

FAILURES = gauge(
    "gpufleet_repair_failures",
    "Outages detected in the ledger's period (month to date), by failure class",
    ("class",),
)
REPAIR_SECONDS_SUM = gauge(
    "gpufleet_repair_time_seconds",
    "Sum of detection-to-healthy times of the period's completed repairs, by kind",
    ("kind",),
)
REPAIR_SECONDS_COUNT = gauge(
    "gpufleet_repairs_completed",
    "Completed repairs in the period, by kind (mean time to repair: repair time / this)",
    ("kind",),
)
OPEN = gauge("gpufleet_repair_open", "Outages not yet repaired, per node", ("node",))
BREACHES = gauge("gpufleet_repair_breaches", "Repairs that missed the contract's repair term", ())
MTBF = gauge(
    "gpufleet_node_mtbf_seconds",
    "Observed seconds per failure of the node in the period (absent: no failure)",
    ("node",),
)


def render_repairs(led: RepairsLedger) -> str:
    """The families' exposition text for ``led``."""
    classes = Counter(r.failure_class for r in led.records)
    seconds: dict[str, float] = defaultdict(float)
    done: Counter[str] = Counter()
    open_by_node: Counter[str] = Counter()
    for r in led.records:
        if r.time_to_repair_ms is None:
            open_by_node[r.node] += 1
        else:
            seconds[r.kind] += r.time_to_repair_ms / 1000
            done[r.kind] += 1
    return "".join(
        (
            family_text(FAILURES, [((c,), float(classes[c])) for c in FAILURE_CLASSES]),
            family_text(REPAIR_SECONDS_SUM, [((k,), v) for k, v in seconds.items()]),
            family_text(REPAIR_SECONDS_COUNT, [((k,), float(v)) for k, v in done.items()]),
            family_text(OPEN, [((n,), float(v)) for n, v in open_by_node.items()]),
            family_text(BREACHES, [((), float(len(led.breaches)))]),
            family_text(
                MTBF, [((n,), h * 3600) for n, h in led.mtbf_hours.items() if h is not None]
            ),
        )
    )
