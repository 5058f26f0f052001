"""The dashboard's delivery panel and ``dev:`` filter over a running fleet.

The dashboard asks its facade for ``tui.capabilities.DeliveryNow``; the running fleet
answers from ``[contract]`` with the delivery ledger's live judges
(``ledger.delivery.now``). Without a contract there is nothing to deviate from: the
panel stays hidden and ``dev:`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleet.model import FleetSnapshot, NodeSnapshot
from fleet.settings.contract_section import ContractSection
from ledger.delivery.now import EnergyToday, delivery_now, gpu_deviations, node_deviations

PANEL_EVERY_S = 10.0
"""How often the panel's document is made again. It reads every GPU of the fleet (at
1,000 nodes that builds 8,000 GPU objects the grid never asks for), and idle counts,
deviations and energy today are not read second by second."""


class DeliveryView:
    """``[contract]``'s terms judged on live snapshots, for the dashboard (a base of
    ``FleetRuntime``: its attribute names say ``delivery`` so they cannot meet the
    runtime's own)."""

    def __init__(self, contract: ContractSection | None) -> None:
        self._delivery_contract = contract
        self._delivery_energy = EnergyToday()
        self._delivery_doc: dict[str, Any] | None = None
        self._delivery_made_at = float("-inf")

    @property
    def contract_terms_known(self) -> bool:
        """Whether there is a contract to judge against (else ``dev:`` is refused)."""
        return self._delivery_contract is not None

    @property
    def working_floor_percent(self) -> float:
        """Below this SM activity (else utilization) a GPU is idle."""
        return (self._delivery_contract or ContractSection()).working_floor_percent

    def deviations(self, node: NodeSnapshot) -> Sequence[str]:
        """The terms the node and its GPUs break now, as short labels."""
        contract = self._delivery_contract
        if contract is None:
            return ()
        own = node_deviations(node, contract)
        return own + [label for gpu in node.gpus for label in gpu_deviations(gpu, contract)]

    def delivery_now(self, snapshot: FleetSnapshot) -> Mapping[str, Any] | None:
        """The panel's document, made at most every :data:`PANEL_EVERY_S` of fleet time;
        None without a contract (the panel stays hidden)."""
        contract = self._delivery_contract
        if contract is None:
            return None
        if (
            self._delivery_doc is None
            or not 0 <= snapshot.taken_at - self._delivery_made_at < PANEL_EVERY_S
        ):
            self._delivery_doc = delivery_now(snapshot, contract, self._delivery_energy)
            self._delivery_made_at = snapshot.taken_at
        return self._delivery_doc
