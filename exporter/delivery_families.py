"""Delivery families for ``/metrics``, from the delivery ledger of the month to date.

Computed off the tick (the ledger reads history on a thread, as the repairs ledger's
families are) and rendered at scrape time from the last result. Labels are bounded:
the five classes, the ten deviation kinds and the nodes; money is left to the report
(a float sample cannot carry an exact decimal), GPU-hours and energy are served.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from exporter.families import family_text, gauge
from ledger.delivery.classes import CLASSES
from ledger.delivery.ledger import DeliveryLedger

# Prometheus' base units (promtool's lint): GPU-seconds, joules and grams; the report
# speaks GPU-hours and kWh.
SECOND_MS = 1_000
GPU_HOURS = gauge(
    "gpufleet_delivery_gpu_seconds",
    "Paid GPU-seconds of the period (month to date) by class",
    ("class",),
)
NODE_IDLE = gauge(
    "gpufleet_delivery_idle_gpu_seconds", "Idle GPU-seconds of the period, per node", ("node",)
)
DEVIATION_HOURS = gauge(
    "gpufleet_delivery_deviation_gpu_seconds",
    "GPU-seconds the delivered hardware deviated from the contract, by kind",
    ("kind",),
)
ENERGY = gauge("gpufleet_delivery_gpu_energy_joules", "GPU energy of the period (J)", ())
FACILITY = gauge(
    "gpufleet_delivery_facility_energy_joules",
    "Facility energy of the period: GPU energy x PUE (J)",
    (),
)
CO2 = gauge("gpufleet_delivery_co2_grams", "CO2 of the facility energy of the period (g)", ())


def render_delivery(led: DeliveryLedger) -> str:
    """The families' exposition text for ``led``."""
    fleet = {c: sum(n.by_class()[c] for n in led.nodes) for c in CLASSES}
    deviations: defaultdict[str, Decimal] = defaultdict(Decimal)
    for d in led.deviations:
        deviations[d.kind] += d.gpu_ms
    gpu_joules = led.energy.fleet_mj / 1000
    parts = [
        family_text(GPU_HOURS, [((c,), fleet[c] / SECOND_MS) for c in CLASSES]),
        family_text(NODE_IDLE, [((n.node,), n.by_class()["idle"] / SECOND_MS) for n in led.nodes]),
        family_text(
            DEVIATION_HOURS, [((k,), float(ms) / SECOND_MS) for k, ms in sorted(deviations.items())]
        ),
        family_text(ENERGY, [((), float(gpu_joules))]),
        family_text(FACILITY, [((), float(gpu_joules) * float(led.pue))]),
    ]
    if led.carbon is not None:
        parts.append(family_text(CO2, [((), float(led.carbon.grams))]))
    return "".join(parts)
