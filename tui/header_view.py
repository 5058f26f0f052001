"""Pure content of the fleet header tiles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleet.facade import FleetSnapshot, NodeSnapshot
from tui import format as fmt
from tui.draw import progress_bar
from tui.node_facts import gpu_facts
from tui.node_view import PROBE_FLAGGED, is_connecting


@dataclass(frozen=True, slots=True)
class HeaderTiles:
    """Markup for each header tile and the state classes it should carry."""

    nodes: str
    broken: str
    gpus: str
    util: str
    sla: str
    connecting: bool
    any_broken: bool
    gpus_degraded: bool
    sla_breach: bool


HEALTHY = frozenset(("ok", "warn"))


@dataclass(slots=True)
class FleetCounts:
    streaming: int = 0
    connecting: int = 0
    broken: int = 0  # broken or unreachable; a node still connecting is neither
    healthy: int = 0
    gpus: int = 0
    probe_flagged: int = 0  # GPUs healthy by telemetry that the last probe flagged
    unseen_gpus: int = 0  # expected GPUs of nodes still connecting
    unmonitored_gpus: int = 0  # GPUs of a silent shard's nodes: the monitor's gap


def gpu_counts(node: NodeSnapshot) -> tuple[int, int, int]:
    """The node's visible GPUs, those healthy, and those healthy that a probe flagged."""
    gpus = gpu_facts(node)
    healthy = flagged = 0
    for g in gpus:
        ok = g.verdict in HEALTHY
        healthy += ok
        flagged += ok and g.probe_verdict in PROBE_FLAGGED
    return len(gpus), healthy, flagged


def _counts(snap: FleetSnapshot, per_node: Sequence[tuple[int, int, int]] | None) -> FleetCounts:
    """One pass over the fleet (the snapshot's properties would walk it four times)."""
    c = FleetCounts()
    if per_node is None:
        per_node = [gpu_counts(n) for n in snap.nodes]
    for n, (seen, healthy, flagged) in zip(snap.nodes, per_node, strict=True):
        c.streaming += n.status == "streaming" and n.state != "unreachable"
        if is_connecting(n):
            c.connecting += 1
            c.gpus += n.expected_gpus
            c.unseen_gpus += n.expected_gpus
            continue
        c.broken += n.state != "up"
        if n.status == "unmonitored":  # nobody watches it now: neither healthy nor not
            c.unmonitored_gpus += max(n.expected_gpus, seen)
            continue
        c.gpus += max(n.expected_gpus, seen)
        c.healthy += healthy
        c.probe_flagged += flagged
    return c


def header_tiles(
    snap: FleetSnapshot | None,
    bar_width: int = 6,
    per_node: Sequence[tuple[int, int, int]] | None = None,
) -> HeaderTiles:
    """The tiles' markup and state classes; ``per_node``: :func:`gpu_counts` of each
    node, worked out already."""
    if snap is None:
        return HeaderTiles(
            "waiting for the first snapshot…", "N/A", "N/A", "N/A", "N/A", True, False, False, False
        )
    total = len(snap.nodes)
    c = _counts(snap, per_node)
    nodes = f"[b]{c.streaming}[/]/{total} streaming"
    if c.connecting:
        nodes += (
            f"\n{progress_bar(total - c.connecting, total, bar_width)} {c.connecting} connecting"
        )
    broken = f"[b]{c.broken}[/] broken"
    if c.connecting:
        broken += f"\n[$muted]{c.connecting} not yet seen[/]"
    gpus = f"[b]{c.healthy}[/]/{c.gpus} healthy"
    if c.probe_flagged:
        gpus += f"\n[$gpu-warn]{c.probe_flagged} flagged by probe[/]"
    elif c.connecting:
        gpus += f"\n[$muted]{c.unseen_gpus} not yet seen[/]"
    elif c.unmonitored_gpus:
        gpus += f"\n[$muted]{c.unmonitored_gpus} unmonitored[/]"
    u = snap.utilization
    util = (
        f"[b]{fmt.pct(u.now)}[/] now\n"
        f"[$muted]1h[/] {fmt.pct(u.avg_1h)}  [$muted]24h[/] {fmt.pct(u.avg_24h)}"
    )
    sla, breach = "[$muted]not configured[/]", False
    if snap.sla is not None:
        s = snap.sla
        breach = s.availability_pct is not None and s.availability_pct < s.slo_pct
        below = f"[$muted]SLO[/] {s.slo_pct:g}%"
        if s.money_withheld is not None and s.availability_pct is not None:
            # Early in a month the figure rests on little monitored time: say how little,
            # as the SLA panel does, rather than a bare 100.000 % (the tile has two lines).
            below = f"[$muted]coverage {s.coverage_pct:.1f} %[/]"
        sla = f"[b]{fmt.pct(s.availability_pct, 3)}[/] MTD\n{below}"
    return HeaderTiles(
        nodes=nodes,
        broken=broken,
        gpus=gpus,
        util=util,
        sla=sla,
        connecting=c.connecting > 0,
        any_broken=c.broken > 0,
        gpus_degraded=c.healthy + c.unseen_gpus < c.gpus or c.probe_flagged > 0,
        sla_breach=breach,
    )
