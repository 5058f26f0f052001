"""The repairs ledger's values: repair records, contract breaches, lemons."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# What the provider did, strongest first: a node replaced outranks a GPU swapped in the
# same outage, a swap outranks the reboot it came with.
RepairKind = Literal["node_replaced", "gpu_swap", "reboot", "gpu_reset", "cleared", "open"]
KIND_ORDER: tuple[RepairKind, ...] = (
    "node_replaced",
    "gpu_swap",
    "reboot",
    "gpu_reset",
    "cleared",
    "open",
)
ClockStart = Literal["acknowledged", "detected"]
# Failure classes the rates are counted in (docs/repairs.md).
FailureClass = Literal["gpu_xid", "ecc_uncorrectable", "nvlink", "network_link", "unreachable"]
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    "gpu_xid",
    "ecc_uncorrectable",
    "nvlink",
    "network_link",
    "unreachable",
)


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the provider did, as seen from the node."""

    kind: RepairKind
    at_ms: int
    gpu: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class Ack:
    """The operator's acknowledgement of a broken node or GPU."""

    node: str
    gpu: int | None
    at_ms: int
    note: str
    ticket: str | None


@dataclass(frozen=True, slots=True)
class RepairRecord:
    """One outage of a node from first evidence to healthy again, and what fixed it."""

    node: str
    detected_ms: int
    resolved_ms: int | None  # None: still broken when the history ends
    kind: RepairKind
    failure_class: FailureClass
    gpus: tuple[int, ...]
    serials: tuple[str, ...]  # serials (or UUIDs) of the GPUs involved, as first seen
    reasons: tuple[str, ...]
    ack: Ack | None
    actions: tuple[Action, ...] = ()
    unmonitored_ms: int = 0  # time inside the outage the monitor could not see

    @property
    def first_action(self) -> Action | None:
        """The provider's first visible action."""
        return self.actions[0] if self.actions else None

    @property
    def time_to_ack_ms(self) -> int | None:
        return None if self.ack is None else self.ack.at_ms - self.detected_ms

    @property
    def time_to_action_ms(self) -> int | None:
        first = self.first_action
        return None if first is None else first.at_ms - self.detected_ms

    @property
    def time_to_repair_ms(self) -> int | None:
        return None if self.resolved_ms is None else self.resolved_ms - self.detected_ms


@dataclass(frozen=True, slots=True)
class Breach:
    """A repair that missed the contract's term."""

    node: str
    detected_ms: int
    clock_from: ClockStart
    took_ms: int  # up to the repair, or up to the end of the history when still open
    allowed_ms: int
    why: str


@dataclass(frozen=True, slots=True)
class Lemon:
    """Hardware that failed again after a repair, with each failure in order."""

    serial: str
    failures: tuple[tuple[str, int, int | None], ...]  # (node, detected_ms, gpu)
    moved: bool = field(default=False)  # failed on more than one node
