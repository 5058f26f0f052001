"""Optional facade capabilities the dashboard asks for that ``fleet.facade`` does not
declare yet. Structural Protocols: a facade with these methods is used whatever it
subclasses; once the facade declares the same Protocol, it is imported from there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from fleet.facade import FleetSnapshot, NodeSnapshot


@runtime_checkable
class DeliveryNow(Protocol):
    """A facade that knows the contract's delivery terms (what a GPU should deliver)."""

    def delivery_now(self, snapshot: FleetSnapshot) -> Mapping[str, Any] | None:
        """The delivery panel's document for ``snapshot`` (idle GPUs and their cost,
        deviations from the contract, energy today)."""
        ...

    def deviations(self, node: NodeSnapshot) -> Sequence[str]:
        """The contract terms the node's GPUs break now, as short labels ("power 300 W",
        "PCIe Gen4", "memory 79.1 GiB")."""
        ...

    @property
    def working_floor_percent(self) -> float:
        """Below this SM activity (else utilization) a GPU is idle."""
        ...
