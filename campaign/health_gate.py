"""Health gate and soak judge: fail-class facts the monitor saw on a node.

Fail class: a GPU or port whose health verdict is ``fail`` (ECC, pending row remap,
link down, ... as ``fleet.health`` decides), a lost GPU, and an XID whose catalog
action makes it a hardware fault. The gate looks at the node as it is; the soak looks
at everything that happened since the soak began.
"""

from __future__ import annotations

from campaign.model import Evidence, Stage
from fleet.model import EventRecord, NodeSnapshot
from fleet.xid import describe

FAIL_EVENTS = frozenset(("gpu_lost", "agent_fatal"))


def health_findings(node: NodeSnapshot, stage: Stage, since: float | None = None) -> list[Evidence]:
    """Fail-class findings on ``node``; events only from ``since`` on when given."""
    found: list[Evidence] = []
    for event in node.events:
        if (since is None or event.t >= since) and _fail_class(event):
            found.append(_event_evidence(event, stage, node))
    for gpu in node.gpus:
        if gpu.lost and not any(e.cause == "gpu_lost" and e.gpu == gpu.index for e in found):
            found.append(
                Evidence(
                    stage, "gpu_lost", f"GPU {gpu.index} lost", gpu=gpu.index, serial=gpu.serial
                )
            )
        elif gpu.verdict == "fail" and not any(e.gpu == gpu.index for e in found):
            reasons = "; ".join(gpu.reasons) or "health verdict fail"
            found.append(
                Evidence(
                    stage,
                    "gpu_fail",
                    f"GPU {gpu.index}: {reasons}",
                    gpu=gpu.index,
                    serial=gpu.serial,
                    at=gpu.since,
                )
            )
        if gpu.remap_pending or gpu.retired_pending:
            found.append(
                Evidence(
                    stage,
                    "remap_pending",
                    f"GPU {gpu.index}: row remap pending",
                    gpu=gpu.index,
                    serial=gpu.serial,
                )
            )
    for port in node.ports:
        if port.verdict == "fail":
            reasons = "; ".join(port.reasons) or "health verdict fail"
            found.append(Evidence(stage, "link", f"port {port.name}: {reasons}", at=port.since))
    return found


def _fail_class(event: EventRecord) -> bool:
    if event.kind in FAIL_EVENTS:
        return True
    return event.kind == "xid" and event.code is not None and describe(event.code).verdict == "fail"


def _event_evidence(event: EventRecord, stage: Stage, node: NodeSnapshot) -> Evidence:
    serial = next((g.serial for g in node.gpus if g.index == event.gpu), None)
    what = f"XID {event.code}" if event.kind == "xid" else event.kind
    detail = f": {event.detail}" if event.detail else ""
    gpu = f" on GPU {event.gpu}" if event.gpu is not None else ""
    cause = f"xid_{event.code}" if event.kind == "xid" else event.kind
    return Evidence(stage, cause, f"{what}{gpu}{detail}", gpu=event.gpu, serial=serial, at=event.t)
