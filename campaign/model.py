"""What a campaign finds: evidence per node, fabric steps, and the state that resumes it.

Every record is a frozen dataclass that round-trips through JSON (``to_json`` /
``from_json``), because the campaign's state file is the only memory a controller
restarted after SIGKILL has.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Stage = Literal["inventory", "health", "probes", "fabric", "soak"]
STAGES: tuple[Stage, ...] = ("inventory", "health", "probes", "fabric", "soak")
StepStatus = Literal["ok", "slow", "hung", "failed"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a node was rejected: the stage, a machine-readable cause and the figures."""

    stage: Stage
    cause: str
    message: str
    measured: float | None = None
    threshold: float | None = None
    peer_median: float | None = None
    gpu: int | None = None
    serial: str | None = None
    at: float | None = None


@dataclass(frozen=True, slots=True)
class FabricStep:
    """One all-reduce run across ``nodes``: its bus bandwidth against the floor."""

    purpose: Literal["ladder", "bisect", "soak"]
    nodes: tuple[str, ...]
    status: StepStatus
    busbw_gbps: float | None
    floor_gbps: float | None
    started_at: float
    seconds: float
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """When a stage (or a resume, or a gap) began and ended, for the report's timeline."""

    what: str
    started_at: float
    ended_at: float | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class CampaignState:
    """Everything a campaign has found so far; the engine replaces it stage by stage."""

    nodes: tuple[str, ...]
    started_at: float
    soak_s: float
    denominator: str = "measured"
    denominator_gbps: float | None = None
    done: tuple[Stage, ...] = ()
    rejected: dict[str, tuple[Evidence, ...]] = field(default_factory=dict)
    steps: tuple[FabricStep, ...] = ()
    timeline: tuple[TimelineEntry, ...] = ()
    soak_done_s: float = 0.0
    tflops_per_gpu: float | None = None
    finished_at: float | None = None

    def active(self) -> tuple[str, ...]:
        """Nodes not rejected so far, in the configured order."""
        return tuple(n for n in self.nodes if n not in self.rejected)

    def reject(self, node: str, evidence: Evidence) -> CampaignState:
        """This state with ``evidence`` added to ``node``'s rejection."""
        rejected = dict(self.rejected)
        rejected[node] = (*rejected.get(node, ()), evidence)
        return replace(self, rejected=rejected)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (tuples become lists)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CampaignState:
        """The state ``to_json`` wrote."""
        rejected = {
            node: tuple(Evidence(**e) for e in items) for node, items in data["rejected"].items()
        }
        return cls(
            nodes=tuple(data["nodes"]),
            started_at=float(data["started_at"]),
            soak_s=float(data["soak_s"]),
            denominator=str(data["denominator"]),
            denominator_gbps=data["denominator_gbps"],
            done=tuple(data["done"]),
            rejected=rejected,
            steps=tuple(FabricStep(**{**s, "nodes": tuple(s["nodes"])}) for s in data["steps"]),
            timeline=tuple(TimelineEntry(**t) for t in data["timeline"]),
            soak_done_s=float(data["soak_done_s"]),
            tflops_per_gpu=data["tflops_per_gpu"],
            finished_at=data["finished_at"],
        )
