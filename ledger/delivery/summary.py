"""The delivery ledger as JSON-ready values (docs/report.md, "delivery")."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ledger.delivery.classes import CLASSES
from ledger.delivery.conformance import Deviation
from ledger.delivery.energy import kwh
from ledger.delivery.ledger import DeliveryLedger

HOUR_MS = Decimal(3_600_000)
CENT = Decimal("0.01")
MILLI = Decimal("0.001")
MOST_IDLE = 10


def iso(ms: int) -> str:
    """UTC ISO 8601 with a Z, to the second."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hours(ms: int | Decimal) -> Decimal:
    """GPU-milliseconds as exact GPU-hours."""
    return Decimal(ms) / HOUR_MS


def fixed(value: Decimal, step: Decimal = MILLI) -> str:
    """``value`` rounded half up to ``step``, as a string."""
    return str(value.quantize(step, rounding=ROUND_HALF_UP))


def money(value: Decimal | None) -> str | None:
    """Money to the cent (half up), None when unpriced."""
    return None if value is None else fixed(value, CENT)


def delivery_json(ledger: DeliveryLedger) -> dict[str, Any]:
    """The whole delivery section's values."""
    contract = ledger.contract
    price = contract.gpu_hour_price
    fleet = {c: sum(n.by_class()[c] for n in ledger.nodes) for c in CLASSES}
    paid = sum(fleet.values())
    return {
        "start": iso(ledger.period.start_ms),
        "end": iso(ledger.period.end_ms),
        "currency": contract.currency,
        "gpu_hour_price": None if price is None else str(price),
        "nodes": len(ledger.nodes),
        "paid_gpu_hours": fixed(hours(paid)),
        "paid_cost": money(None if price is None else price * hours(paid)),
        "delivered_healthy_gpu_hours": fixed(
            hours(fleet["working"] + fleet["idle"] + fleet["provider"])
        ),
        "classes": {
            c: {
                "gpu_hours": fixed(hours(fleet[c])),
                "cost": money(None if price is None else price * hours(fleet[c])),
            }
            for c in CLASSES
        },
        "most_idle": _most_idle(ledger, price),
        "per_node": [_node_row(ledger, n.node) for n in ledger.nodes],
        "deviations": [_deviation(d) for d in ledger.deviations],
        "deviation_credit": money(
            sum((d.credit for d in ledger.deviations if d.credit is not None), Decimal(0))
            if any(d.credit is not None for d in ledger.deviations)
            else None
        ),
        "energy": _energy(ledger),
        "throughput": _throughput(ledger, fleet),
    }


def _most_idle(ledger: DeliveryLedger, price: Decimal | None) -> list[dict[str, Any]]:
    idle = {n.node: (n.by_class()["idle"], n.paid_ms) for n in ledger.nodes}
    ranked = sorted((n for n in idle if idle[n][0] > 0), key=lambda n: (-idle[n][0], n))
    return [
        {
            "node": node,
            "idle_gpu_hours": fixed(hours(idle[node][0])),
            "idle_share": fixed(Decimal(idle[node][0]) / idle[node][1], Decimal("0.0001")),
            "idle_cost": money(None if price is None else price * hours(idle[node][0])),
        }
        for node in ranked[:MOST_IDLE]
    ]


def _node_row(ledger: DeliveryLedger, node: str) -> dict[str, Any]:
    found = next(n for n in ledger.nodes if n.node == node)
    row: dict[str, Any] = {"node": node}
    row.update({c: fixed(hours(v)) for c, v in found.by_class().items()})
    row["gpu_kwh"] = fixed(kwh(ledger.energy.node_mj.get(node, 0)))
    return row


def _deviation(d: Deviation) -> dict[str, Any]:
    return {
        "node": d.node,
        "gpu": d.gpu,
        "port": d.port,
        "kind": d.kind,
        "start": iso(d.start_ms),
        "end": iso(d.end_ms),
        "gpus": fixed(d.gpus),
        "gpu_hours": fixed(hours(d.gpu_ms)),
        "measured": d.measured,
        "contracted": d.contracted,
        "credit": money(d.credit),
    }


def _energy(ledger: DeliveryLedger) -> dict[str, Any]:
    use = ledger.energy
    gpu_kwh = kwh(use.fleet_mj)
    out: dict[str, Any] = {
        "gpu_kwh": fixed(gpu_kwh),
        "pue": str(ledger.pue),
        "facility_kwh": fixed(gpu_kwh * ledger.pue),
        "minutes_from_counter": use.counter_minutes,
        "minutes_from_power": use.power_minutes,
        "minutes_unknown": use.unknown_minutes,
        "co2_kg": None,
        "intensity_source": None,
        "intensity_missing_hours": None,
    }
    if ledger.carbon is not None:
        out["co2_kg"] = fixed(ledger.carbon.grams / 1000)
        out["intensity_source"] = ledger.carbon.source
        out["intensity_missing_hours"] = ledger.carbon.missing_hours
    out["by_class"] = _energy_by_class(ledger)
    return out


def _energy_by_class(ledger: DeliveryLedger) -> dict[str, dict[str, str | None]]:
    split = ledger.class_energy.mj
    grams = None if ledger.carbon is None else ledger.carbon.class_grams
    return {
        c: {
            "gpu_kwh": fixed(kwh(split.get(c, 0))),
            "facility_kwh": fixed(kwh(split.get(c, 0)) * ledger.pue),
            "co2_kg": None if grams is None else fixed(grams[c] / 1000),
        }
        for c in CLASSES
    }


def _throughput(ledger: DeliveryLedger, fleet: dict[str, int]) -> dict[str, Any]:
    by_class = dict.fromkeys(CLASSES, Decimal(0))  # TFLOPS-hours
    datasheet_ms = 0
    for node in ledger.nodes:
        for gpu, per in node.gpu_ms.items():
            figure = ledger.throughput.get((node.node, gpu))
            if figure is None:
                continue
            datasheet_ms += sum(per.values()) if figure.source == "datasheet" else 0
            for c in CLASSES:
                by_class[c] += hours(per[c]) * figure.tflops
    paid = sum(by_class.values(), Decimal(0))
    price = ledger.contract.gpu_hour_price
    cost = None if price is None else price * hours(sum(fleet.values()))
    grams = None if ledger.carbon is None else ledger.carbon.grams
    return {
        "tflops_hours": {c: fixed(v) for c, v in by_class.items()},
        "datasheet_gpu_hours": fixed(hours(datasheet_ms)),
        "cost_per_1000_tflops_hour_paid": _per(cost, paid, 1000),
        "cost_per_1000_tflops_hour_working": _per(cost, by_class["working"], 1000),
        "g_co2_per_tflops_hour_working": _per(grams, by_class["working"], 1, MILLI),
        "g_co2_per_tflops_hour": {
            c: None if ledger.carbon is None
            else _per(ledger.carbon.class_grams[c], by_class[c], 1, MILLI)
            for c in CLASSES
        },
    }  # fmt: skip


def _per(
    amount: Decimal | None, tflops_hours: Decimal, per: int, step: Decimal = CENT
) -> str | None:
    if amount is None or tflops_hours == 0:
        return None
    return fixed(amount * per / tflops_hours, step)
