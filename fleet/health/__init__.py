"""Health rules: GPU, port and node verdicts as pure functions (docs/health.md)."""

from fleet.health.facts import GpuFacts, Judgement, PortFacts, XidMark
from fleet.health.gpu import judge_gpu, xid_verdict
from fleet.health.liveness import (
    BLIND_STATUSES,
    LinkFacts,
    Liveness,
    judge_liveness,
    liveness_of,
)
from fleet.health.node import (
    UNREACHABLE_STATUSES,
    GpuVerdictView,
    NodeJudgement,
    NodeStatusView,
    judge_node,
    node_status_view,
)
from fleet.health.port import judge_port

__all__ = [
    "BLIND_STATUSES",
    "UNREACHABLE_STATUSES",
    "GpuFacts",
    "GpuVerdictView",
    "Judgement",
    "LinkFacts",
    "Liveness",
    "NodeJudgement",
    "NodeStatusView",
    "PortFacts",
    "XidMark",
    "judge_gpu",
    "judge_liveness",
    "judge_node",
    "judge_port",
    "liveness_of",
    "node_status_view",
    "xid_verdict",
]
