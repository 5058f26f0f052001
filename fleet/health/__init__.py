"""Health rules: GPU, port and node verdicts as pure functions (docs/health.md)."""

from fleet.health.facts import GpuFacts, Judgement, PortFacts, XidMark
from fleet.health.gpu import judge_gpu, xid_verdict
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
    "UNREACHABLE_STATUSES",
    "GpuFacts",
    "GpuVerdictView",
    "Judgement",
    "NodeJudgement",
    "NodeStatusView",
    "PortFacts",
    "XidMark",
    "judge_gpu",
    "judge_node",
    "judge_port",
    "node_status_view",
    "xid_verdict",
]
