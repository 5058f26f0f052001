"""The filter terms that ask what a node delivers: ``state:idle`` and ``dev:``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fleet.facade import NodeSnapshot

DEFAULT_WORKING_FLOOR = 5.0  # [contract] working_floor_percent's default
# The first word of each deviation label (``ledger.delivery.now``): a GPU's own terms,
# then the node's.
DEV_WORDS = ("power", "pcie", "memory", "nvlink", "model", "gpus", "driver", "network")


@dataclass(frozen=True, slots=True)
class DeliveryTerms:
    """What the fleet's contract says a working GPU is, for the filter."""

    working_floor_percent: float = DEFAULT_WORKING_FLOOR
    # The node's deviation labels; None: this fleet knows no contract terms.
    deviations: Callable[[NodeSnapshot], Sequence[str]] | None = None


def has_idle_gpu(node: NodeSnapshot, floor: float) -> bool:
    """A GPU below the working floor (SM activity, else utilization) that no process
    other than the renter's holds: paid for and doing nothing."""
    if node.state != "up":
        return False
    for gpu in node.gpus:
        activity = gpu.sm_active if gpu.sm_active is not None else gpu.util_gpu
        if activity is not None and activity < floor and not gpu.foreign_procs:
            return True
    return False


def dev_predicate(term: str, terms: DeliveryTerms) -> Callable[[NodeSnapshot], bool]:
    """``dev:`` (any deviation from the contract) or ``dev:`` with words of
    :data:`DEV_WORDS` (``dev:power|driver``)."""
    deviations = terms.deviations
    if deviations is None:
        raise ValueError(f"{term}: this fleet knows no contract terms to deviate from")
    words = [w for w in term[4:].lower().split("|") if w]
    bad = [w for w in words if w not in DEV_WORDS]
    if bad:
        raise ValueError(f"unknown deviation {', '.join(bad)} in {term}; use {'|'.join(DEV_WORDS)}")

    def deviates(node: NodeSnapshot) -> bool:
        labels = [label.lower() for label in deviations(node)]
        if not words:
            return bool(labels)
        return any(label.startswith(w) for label in labels for w in words)

    return deviates
