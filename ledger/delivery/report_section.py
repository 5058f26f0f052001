"""The delivery ledger as a section of ``gpufleet report``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.delivery.ledger import DeliveryLedger
from ledger.delivery.markdown import delivery_markdown
from ledger.delivery.summary import delivery_json


@dataclass(frozen=True)
class DeliverySection:
    """Delivered against contracted: classes, deviations, energy, cost of compute."""

    ledger: DeliveryLedger
    key: str = "delivery"
    title: str = "Delivered against contracted"

    def to_json(self) -> dict[str, Any]:
        """See docs/report.md, "delivery"."""
        return delivery_json(self.ledger)

    def markdown(self) -> str:
        """The section's tables."""
        return delivery_markdown(self.to_json())
