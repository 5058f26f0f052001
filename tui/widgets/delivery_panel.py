"""The dashboard's delivery panel: idle GPUs now and what they cost per day, deviations
from the contract now, GPU energy today. It draws the document the domain builds
(``delivery_now``, handed over by the facade); node names are escaped for markup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from textual.reactive import reactive
from textual.widgets import Static

NO_DATA = "Delivery: waiting for the first snapshot."
DEVIATION_LINES = 5


def delivery_markup(doc: Mapping[str, Any] | None) -> str:
    """Markup of the panel for one document (None: nothing yet)."""
    if not doc:
        return NO_DATA
    cost = doc["idle_cost_per_day"]
    money = "" if cost is None else f" ({cost} {escape(doc['currency'])}/day)"
    lines = [
        f"Idle now: {doc['idle_gpus']} GPUs{money}",
        f"Deviating now: {doc['deviating_gpus']} GPUs",
    ]
    # A node's own terms (GPU count, driver, network) first: each takes all its GPUs.
    for n in doc.get("node_deviations", [])[:DEVIATION_LINES]:
        lines.append(f"  {escape(n['node'])}: {escape(', '.join(n['what']))}")
    for d in doc["deviations"][:DEVIATION_LINES]:
        lines.append(f"  {escape(d['node'])} GPU {d['gpu']}: {escape(', '.join(d['what']))}")
    lines.append(f"GPU energy today: {doc['energy_today_kwh']:,.1f} kWh")
    return "\n".join(lines)


class DeliveryPanel(Static):
    """The panel; the screen assigns a new document each tick (never mutates one)."""

    doc: reactive[Mapping[str, Any] | None] = reactive(None)

    def watch_doc(self, doc: Mapping[str, Any] | None) -> None:
        self.update(delivery_markup(doc))
