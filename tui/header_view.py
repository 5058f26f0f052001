"""Pure content of the fleet header tiles."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.facade import FleetSnapshot
from tui import format as fmt
from tui.draw import progress_bar


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


def _counts(snap: FleetSnapshot) -> tuple[int, int, int, int, int]:
    """Nodes streaming, connecting, broken; GPUs healthy and expected: one pass (the
    snapshot's properties would walk the fleet four times)."""
    streaming = connecting = broken = healthy = total = 0
    for n in snap.nodes:
        status = n.status
        streaming += status == "streaming"
        connecting += status == "connecting"
        broken += n.state != "up"
        gpus = n.gpus
        total += max(n.expected_gpus, len(gpus))
        for g in gpus:
            healthy += g.verdict in HEALTHY
    return streaming, connecting, broken, healthy, total


def header_tiles(snap: FleetSnapshot | None, bar_width: int = 16) -> HeaderTiles:
    if snap is None:
        return HeaderTiles(
            "waiting for the first snapshot…", "N/A", "N/A", "N/A", "N/A", True, False, False, False
        )
    total = len(snap.nodes)
    streaming, connecting, broken, healthy, gpus_total = _counts(snap)
    nodes = f"[b]{streaming}[/]/{total} streaming"
    if connecting:
        nodes += f"\n{progress_bar(streaming, total, bar_width)} {connecting} connecting"
    u = snap.utilization
    util = (
        f"[b]{fmt.pct(u.now)}[/] now\n"
        f"[$muted]1 h[/] {fmt.pct(u.avg_1h)}  [$muted]24 h[/] {fmt.pct(u.avg_24h)}"
    )
    sla, breach = "[$muted]not configured[/]", False
    if snap.sla is not None:
        s = snap.sla
        breach = s.availability_pct is None or s.availability_pct < s.slo_pct
        sla = f"[b]{fmt.pct(s.availability_pct, 3)}[/] MTD\n[$muted]SLO[/] {s.slo_pct:g}%"
    return HeaderTiles(
        nodes=nodes,
        broken=f"[b]{broken}[/] broken",
        gpus=f"[b]{healthy}[/]/{gpus_total} healthy",
        util=util,
        sla=sla,
        connecting=connecting > 0,
        any_broken=broken > 0,
        gpus_degraded=healthy < gpus_total,
        sla_breach=breach,
    )
