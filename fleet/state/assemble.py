"""Judge a node and freeze its tick: briefs, rows and the verdict columns.

No GpuSnapshot or PortSnapshot is built here: the NodeSnapshot holds the tick's rows
(:class:`fleet.state.rows.StateRows`) and builds them when a reader asks.
"""

from __future__ import annotations

import math
from operator import is_
from typing import Any

from fleet.health import (
    GpuVerdictView,
    Judgement,
    NodeJudgement,
    NodeStatusView,
    judge_node,
    judge_port,
    node_status_view,
)
from fleet.model import PENDING, VERDICT_RANK, NodeSnapshot, NodeTransition
from fleet.settings.health_section import HealthSection
from fleet.state.build import Steady, port_static, steady_of
from fleet.state.node import NodeTrack
from fleet.state.port import PortTrack
from fleet.state.port_tick import PortFrozen
from fleet.state.rows import GpuErrors, PortRows, StateRows


def refresh(node: NodeTrack, now: float, tick: PortFrozen) -> NodeTransition | None:
    """Re-judge ``node`` at ``now`` and freeze its snapshot.

    Returns:
        The transition when the node's state changed (its first state counts as one).
    """
    cfg = node.cfg
    view = node_status_view(
        node.status,
        node.status_reason,
        node.last_sample_at,
        node.interval,
        cfg,
        now,
        node.watched_since,
    )
    judged = _judge_gpus(node, cfg, now)
    # Ports whose facts did not move since the last refresh and whose holds still run
    # would be judged the same: keep their briefs, take the tick's rows.
    steady = not node.ports_changed.since_refresh and now < node.ports_until
    ports, judged_ports = _ports(node, 0, node.ports, cfg, now, steady)
    nics, judged_nics = _ports(node, 1, node.nics, cfg, now, steady)
    node.ports_changed.since_refresh = node.hw_moved = False
    if judged_ports or judged_nics:
        node.ports_until = min(
            (p.judgement.until for p in (*node.ports, *node.nics)), default=math.inf
        )
    if judged or judged_ports or judged_nics or node.earliest is None:
        node.earliest = _earliest(node)  # holds change only when something was judged
    state, reasons, until = _node_state(node, view, judged_ports, cfg, now)
    transition = None
    if state != node.state:
        node.state, node.state_since = state, now
        transition = NodeTransition(node.spec.name, state, now, reasons)
    node.state_reasons = reasons
    _count_utilization(node, state != "unreachable")
    node.until = min(until, view.until, node.earliest)
    node.snap = _node_snapshot(node, view, ports, nics, tick)
    node.dirty = node.facts_moved = False
    return transition


def _node_state(
    node: NodeTrack, view: NodeStatusView, ports_judged: bool, cfg: HealthSection, now: float
) -> NodeJudgement:
    """The node rule's judgement; the last one while none of its inputs changed.

    Its inputs are the status view, the GPUs' verdict views (the same tuple while no
    verdict moved) and the ports' judgements (new only where a port was judged). A node
    that is not unreachable stays so while its status and reason hold and it is not
    silent for long; only the time it may turn unreachable moves with its last sample.
    """
    last = node.node_judged
    if (
        last is not None
        and not ports_judged
        and last.state != "unreachable"
        and node.judged_with == (view.status, view.reason)
        and node.judged_views is node.verdict_views
        and node.judged_ports is node.ports
        and view.silent_s is not None
        and view.silent_s < cfg.stale_unreachable_s
    ):
        return NodeJudgement(
            last.state, last.reasons, now - view.silent_s + cfg.stale_unreachable_s
        )
    judgements = [track.judgement for track in node.ports]
    judgement = judge_node(
        view,
        node.verdict_views,
        node.spec.expected_gpus,
        judgements,
        cfg,
        now,
        nvml_error=node.nvml_error,
    )
    node.node_judged, node.judged_with = judgement, (view.status, view.reason)
    node.judged_views, node.judged_ports = node.verdict_views, node.ports
    return judgement


def _earliest(node: NodeTrack) -> float:
    times = [g.until for g in node.gpus]
    times.extend(p.judgement.until for p in node.ports)
    times.extend(p.judgement.until for p in node.nics)
    return min(times, default=math.inf)


def _judge_gpus(node: NodeTrack, cfg: HealthSection, now: float) -> bool:
    """Judge the GPUs that need it; new briefs and verdict ranks only where one changed.

    Returns:
        Whether any GPU was judged.
    """
    tracks = node.gpus
    changed = len(node.gpu_briefs) != len(tracks)
    judged = False
    for track in tracks:
        if track.rejudge or now >= track.until:
            track.judge(cfg, now)
            judged = True
        if track.brief is None:
            changed = True
    if not changed:
        return judged
    briefs = tuple(track.brief_now() for track in tracks)
    node.gpu_briefs = briefs
    node.verdict_views = tuple(GpuVerdictView(b.index, b.verdict, b.reasons) for b in briefs)
    start = node.gpu_start
    node.arena.verdict[start : start + len(briefs)] = [VERDICT_RANK[b.verdict] for b in briefs]
    return judged


def _count_utilization(node: NodeTrack, counted: bool) -> None:
    # An unreachable node's last readings are not the fleet's utilization now.
    if counted == node.counted:
        return
    node.counted = counted
    start, count = node.gpu_start, len(node.gpus)
    mask = node.arena.counted
    mask[start : start + node.gpu_slots] = False
    mask[start : start + count] = counted


def _ports(
    node: NodeTrack,
    which: int,
    tracks: list[PortTrack],
    cfg: HealthSection,
    now: float,
    steady: bool,
) -> tuple[PortRows, bool]:
    """The ports' rows at this tick, and whether any port was judged.

    The briefs tuple (and the hw one) is last tick's object while every element is:
    readers skip a node's ports by that identity.
    """
    last = node.port_rows.get(id(tracks))
    if steady and last is not None and len(last.briefs) == len(tracks):
        hw = last.hw
        if node.hw_moved:  # else every port holds the counters it held then
            hw = same_or(last.hw, tuple(track.hw for track in tracks))
        rows = node.port_rows_now(which, tracks)
        result = PortRows(last.briefs, last.static, rows, hw)
        node.port_rows[id(tracks)] = result
        return result, False
    briefs = []
    judged = False
    for track in tracks:
        expected = None if track.is_nic else node.expected_rate(track.info.kind)
        if track.rejudge or now >= track.judgement.until or expected != track.expected:
            judgement: Judgement = judge_port(track.facts, expected, cfg, now)
            track.judge(judgement, now)
            track.expected = expected
            judged = True
        brief = track.brief
        if brief is None or brief.expected_rate_gbps != expected:
            brief = track.brief_now(expected)
        briefs.append(brief)
    rows = node.port_rows_now(which, tracks)
    hw = tuple(track.hw for track in tracks)
    if last is None or len(last.briefs) != len(tracks):
        result = PortRows(tuple(briefs), tuple(map(port_static, tracks)), rows, hw)
    else:
        result = PortRows(
            same_or(last.briefs, tuple(briefs)), last.static, rows, same_or(last.hw, hw)
        )
    node.port_rows[id(tracks)] = result
    return result, judged


def same_or(last: tuple[Any, ...], now: tuple[Any, ...]) -> tuple[Any, ...]:
    """``last`` when it holds the very same objects as ``now`` (readers compare by identity)."""
    return last if len(last) == len(now) and all(map(is_, now, last)) else now


def steady_readings(node: NodeTrack) -> Steady:
    """The GPUs' steady readings: the last ones until a slow row or a new session."""
    layout = node.layout
    if layout is None:
        return ()
    steady = node.steady
    if not node.steady_stale and len(steady) == len(node.gpus):
        return steady  # no slow row and no new session since it was taken
    node.steady_stale = False
    if len(steady) != len(node.gpus) or any(t.slow_values is None for t in node.gpus):
        steady = tuple(steady_of(track, layout.slow) for track in node.gpus)
        node.steady = steady
    return steady


def _errors(node: NodeTrack) -> GpuErrors | None:
    if not node.had_errors or not any(track.errors for track in node.gpus):
        return None
    return tuple(track.errors for track in node.gpus)


def _node_snapshot(
    node: NodeTrack,
    view: NodeStatusView,
    ports: PortRows,
    nics: PortRows,
    tick: PortFrozen,
) -> NodeSnapshot:
    hello, layout = node.hello, node.layout
    if len(node.events_view) != len(node.events) or (
        node.events and node.events_view[-1] is not node.events[-1]
    ):
        node.events_view = tuple(node.events)
    assert node.state is not None
    rows = StateRows.of(
        node.gpu_start,
        node.gpu_briefs,
        (
            None if layout is None else layout.gpu,
            node.fast_rows,
            steady_readings(node),
        ),
        _errors(node),
        ports,
        nics,
        tick,
    )
    return NodeSnapshot(
        name=node.spec.name,
        status=view.status,
        status_reason=view.reason,
        last_seen=node.last_seen,
        state=node.state,
        broken_reasons=node.state_reasons,
        state_since=node.state_since,
        expected_gpus=node.spec.expected_gpus,
        gpus=PENDING,
        ports=PENDING,
        nics=PENDING,
        events=node.events_view,
        driver=hello.driver if hello else None,
        cuda=hello.cuda if hello else None,
        agent_version=hello.agent if hello else None,
        boot_id=hello.boot_id if hello else None,
        machine_id=hello.machine_id if hello else None,
        model=node.gpus[0].info.name if node.gpus else None,
        sampled_at=node.sampled_at,
        jobs=node.jobs,
        rows=rows,
    )
