"""Judge a node and build its NodeSnapshot, reusing every GPU and port object that held still."""

from __future__ import annotations

import math

from fleet.health import (
    GpuVerdictView,
    Judgement,
    NodeStatusView,
    judge_node,
    judge_port,
    node_status_view,
)
from fleet.model import GpuSnapshot, NodeSnapshot, NodeTransition, PortSnapshot
from fleet.settings.health_section import HealthSection
from tests.fleet.reference.build import gpu_snapshot, port_snapshot
from tests.fleet.reference.node import NodeTrack
from tests.fleet.reference.port import PortTrack


def refresh(node: NodeTrack, now: float) -> NodeTransition | None:
    """Re-judge ``node`` at ``now`` and rebuild its snapshot.

    Returns:
        The transition when the node's state changed (its first state counts as one).
    """
    cfg = node.cfg
    view = node_status_view(
        node.status, node.status_reason, node.last_sample_at, node.interval, cfg, now
    )
    gpus = _gpus(node, cfg, now)
    ports = _ports(node, node.ports, cfg, now)
    nics = _ports(node, node.nics, cfg, now)
    views = [GpuVerdictView(g.index, g.verdict, g.reasons) for g in gpus]
    judgements = [track.judgement for track in node.ports]
    state, reasons, until = judge_node(
        view, views, node.spec.expected_gpus, judgements, cfg, now, nvml_error=node.nvml_error
    )
    transition = None
    if state != node.state:
        node.state, node.state_since = state, now
        transition = NodeTransition(node.spec.name, state, now, reasons)
    node.state_reasons = reasons
    if state == "unreachable":  # its last readings are not the fleet's utilization now
        node.util_sum, node.util_count = 0.0, 0
    node.until = min(until, view.until, _earliest(node))
    node.snap = _node_snapshot(node, view, gpus, ports, nics)
    node.dirty = False
    return transition


def _earliest(node: NodeTrack) -> float:
    times = [g.until for g in node.gpus]
    times.extend(p.judgement.until for p in node.ports)
    times.extend(p.judgement.until for p in node.nics)
    return min(times, default=math.inf)


def _gpus(node: NodeTrack, cfg: HealthSection, now: float) -> tuple[GpuSnapshot, ...]:
    layout = node.layout
    out = []
    total, count = 0.0, 0
    for track in node.gpus:
        if track.dirty or now >= track.until or track.snap is None:
            if track.rejudge or now >= track.until:
                track.judge(cfg, now)
            if layout is not None:
                track.snap = gpu_snapshot(track, layout.gpu, layout.slow)
            else:
                track.snap = GpuSnapshot(track.info.index, track.info.uuid, track.info.name)
            track.dirty = False
        snap = track.snap
        if snap.util_gpu is not None:
            total += snap.util_gpu
            count += 1
        out.append(snap)
    node.util_sum, node.util_count = total, count
    return tuple(out)


def _ports(
    node: NodeTrack, tracks: list[PortTrack], cfg: HealthSection, now: float
) -> tuple[PortSnapshot, ...]:
    out = []
    for track in tracks:
        snap = track.snap
        if track.dirty or now >= track.judgement.until or snap is None:
            expected = None if track.is_nic else node.expected_rate(track.info.kind)
            if track.rejudge or now >= track.judgement.until or expected != track.expected:
                judgement: Judgement = judge_port(track.facts, expected, cfg, now)
                track.judge(judgement, now)
                track.expected = expected
            snap = port_snapshot(track, expected)
            track.snap = snap
            track.dirty = False
        out.append(snap)
    return tuple(out)


def _node_snapshot(
    node: NodeTrack,
    view: NodeStatusView,
    gpus: tuple[GpuSnapshot, ...],
    ports: tuple[PortSnapshot, ...],
    nics: tuple[PortSnapshot, ...],
) -> NodeSnapshot:
    hello = node.hello
    if len(node.events_view) != len(node.events) or (
        node.events and node.events_view[-1] is not node.events[-1]
    ):
        node.events_view = tuple(node.events)
    assert node.state is not None
    return NodeSnapshot(
        name=node.spec.name,
        status=view.status,
        status_reason=view.reason,
        last_seen=node.last_seen,
        state=node.state,
        broken_reasons=node.state_reasons,
        state_since=node.state_since,
        expected_gpus=node.spec.expected_gpus,
        gpus=gpus,
        ports=ports,
        nics=nics,
        events=node.events_view,
        driver=hello.driver if hello else None,
        cuda=hello.cuda if hello else None,
        agent_version=hello.agent if hello else None,
        boot_id=hello.boot_id if hello else None,
        machine_id=hello.machine_id if hello else None,
        model=gpus[0].name if gpus else None,
        sampled_at=node.sampled_at,
    )
