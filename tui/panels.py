"""Pure content of the dashboard panels (markup with theme role variables)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.markup import escape

from fleet.facade import (
    CONNECTED_STATUSES,
    VERDICT_RANK,
    FleetSnapshot,
    NodeSnapshot,
    SlaSummary,
    Verdict,
)
from tui import format as fmt
from tui.draw import VERDICT_GLYPH, VERDICT_ROLE, port_problem
from tui.node_facts import gpu_facts, link_trouble, nic_facts, nvlink_trouble, port_facts


@dataclass(frozen=True, slots=True)
class FailedGpu:
    node: str
    index: int
    serial: str | None
    uuid: str
    verdict: Verdict
    reasons: tuple[str, ...]
    since: float | None

    probe: str | None = None  # the probe's finding when a probe flagged this GPU


FAILED = frozenset(v for v in VERDICT_RANK if VERDICT_RANK[v] >= VERDICT_RANK["fail"])
PROBE_FLAGGED = frozenset(("slow", "straggler", "fail"))


def node_failed_gpus(n: NodeSnapshot) -> tuple[FailedGpu, ...]:
    """The node's GPUs that failed, were lost or were flagged by a probe (from its briefs)."""
    rows = []
    for g in gpu_facts(n):
        probe = g.probe_verdict if g.probe_verdict in PROBE_FLAGGED else None
        if g.verdict in FAILED:
            rows.append(
                FailedGpu(n.name, g.index, g.serial, g.uuid, g.verdict, g.reasons, g.since, probe)
            )
        elif probe is not None:
            verdict: Verdict = "fail" if probe == "fail" else "warn"
            reasons = (f"probe: {probe}",)
            rows.append(FailedGpu(n.name, g.index, g.serial, g.uuid, verdict, reasons, None, probe))
    return tuple(rows)


def failed_gpus(
    snapshot: FleetSnapshot | None, per_node: Sequence[tuple[FailedGpu, ...]] | None = None
) -> list[FailedGpu]:
    """GPUs whose verdict is fail or lost, or that the last probe flagged; newest first
    (probe findings, which carry no start time, after the telemetry failures).
    ``per_node``: :func:`node_failed_gpus` of each node, worked out already."""
    if snapshot is None:
        return []
    if per_node is None:
        per_node = [node_failed_gpus(n) for n in snapshot.nodes]
    rows = [row for node_rows in per_node for row in node_rows]
    rows.sort(key=lambda r: (-(r.since or 0.0), r.node, r.index))
    return rows


def failed_gpu_markup(row: FailedGpu, now: float | None = None) -> str:
    """One line: verdict, node, GPU, how long ago it began, and why (cut by the panel)."""
    role = VERDICT_ROLE[row.verdict]
    glyph = VERDICT_GLYPH[row.verdict]
    by_probe = row.probe is not None and row.since is None
    word = (row.probe or "") if by_probe else row.verdict
    reasons = list(row.reasons) or ["no reason recorded"]
    if row.probe is not None and not by_probe:
        reasons.append(f"probe: {row.probe}")
    if by_probe:
        when = "by probe"
    elif now is not None and row.since is not None:
        when = fmt.ago(row.since, now)
    else:
        when = fmt.stamp(row.since)
    return (
        f"[b ${role}]{glyph} {word.upper():4}[/] [b]{escape(row.node)}[/] GPU {row.index}"
        f" [$muted]{when}[/] {escape('; '.join(reasons))}"
    )


NO_LINK_DATA = "[$muted]no data yet: no node has reported its ports[/]"
ALL_LINKS_UP = "[$link-up]● all links up, no errors[/]"


def _reports_links(node: NodeSnapshot) -> bool:
    return node.state != "unreachable" and node.status in CONNECTED_STATUSES


def links_reported(snapshot: FleetSnapshot | None) -> bool:
    """Whether any node has streamed (only then does "all links up" mean something)."""
    if snapshot is None:
        return False
    return any(map(_reports_links, snapshot.nodes))


def quiet_links_text(snapshot: FleetSnapshot | None) -> str:
    """The panel's line when no link is in trouble: "all links up" only when every node
    reports its links; else how many nodes do, and how many are not heard from."""
    if snapshot is None or not links_reported(snapshot):
        return NO_LINK_DATA
    silent = sum(1 for n in snapshot.nodes if not _reports_links(n))
    if not silent:
        return ALL_LINKS_UP
    heard = len(snapshot.nodes) - silent
    return (
        f"[$link-up]● links up on {heard} reporting node(s)[/]\n"
        f"[$muted]{silent} node(s) not reported yet[/]"
    )


def node_link_trouble(node: NodeSnapshot) -> tuple[bool, bool]:
    """Whether a port or NIC of the node, and whether an NVLink of it, needs a closer look
    (from its briefs)."""
    ports = any(map(link_trouble, port_facts(node))) or any(map(link_trouble, nic_facts(node)))
    return ports, any(map(nvlink_trouble, gpu_facts(node)))


def link_issue_lines(
    snapshot: FleetSnapshot | None,
    limit: int = 5,
    trouble: Sequence[tuple[bool, bool]] | None = None,
) -> list[str]:
    """Ports down/degraded/erroring and GPUs with NVLink errors: markup, one entry each.
    ``trouble``: :func:`node_link_trouble` of each node, worked out already."""
    if snapshot is None:
        return []
    lines: list[str] = []
    if trouble is None:
        trouble = [node_link_trouble(n) for n in snapshot.nodes]
    for node, (ports, nvlink) in zip(snapshot.nodes, trouble, strict=True):
        # Facts first: only a node with a link in trouble has its port or GPU objects read.
        if ports:
            lines.extend(_port_lines(node))
        if nvlink:
            lines.extend(_nvlink_lines(node))
    if len(lines) > limit:
        more = len(lines) - limit + 1
        lines = [*lines[: limit - 1], f"[$muted]… and {more} more[/]"]
    return lines


def _port_lines(node: NodeSnapshot) -> list[str]:
    out = []
    for p in node.ports + node.nics:
        if p.verdict == "ok" and not (
            p.link_downed_delta or p.symbol_error_rate or p.rcv_error_rate
        ):
            continue  # judged healthy and not erroring: the common case, checked cheaply
        problem = port_problem(p)
        if problem == "up":
            continue
        role = "link-down" if problem in ("down", "failing") else "link-degraded"
        glyph = "○" if problem == "down" else "◐"
        speed = f"{fmt.count_f(p.rate_gbps)}/{fmt.count_f(p.expected_rate_gbps)} Gb/s"
        out.append(
            f"[${role}]{glyph} {escape(node.name)} {escape(p.name)}[/] {p.kind} "
            f"[${role}]{escape(p.state or 'N/A')}[/] {escape(p.phys_state or '')}\n"
            f"    {speed} · downed +{p.link_downed_delta} · "
            f"sym {fmt.rate(p.symbol_error_rate)} · rcv {fmt.rate(p.rcv_error_rate)}"
        )
    return out


def _nvlink_lines(node: NodeSnapshot) -> list[str]:
    out = []
    for g in node.gpus:
        if not (g.nvlink_crc_rate or g.nvlink_replay_delta or g.nvlink_recovery_delta) and (
            g.nvlink_active == g.nvlink_total
        ):
            continue
        crc, replay = g.nvlink_crc_rate or 0, g.nvlink_replay_delta or 0
        recov = g.nvlink_recovery_delta or 0
        down = (
            g.nvlink_active is not None
            and g.nvlink_total is not None
            and g.nvlink_active < g.nvlink_total
        )
        if not (crc > 0 or replay or recov or down):
            continue
        links = f"{fmt.count(g.nvlink_active)}/{fmt.count(g.nvlink_total)} links"
        role = "link-down" if recov or down else "link-degraded"
        out.append(
            f"[${role}]◐ {escape(node.name)} GPU {g.index} NVLink[/] {links}\n"
            f"    CRC {fmt.rate(crc)} · replay +{replay} · recovery +{recov}"
        )
    return out


def sla_markup(sla: SlaSummary | None) -> str:
    if sla is None:
        return (
            "[$muted]No provider contract configured.[/]\n"
            "Add an [b]\\[sla][/] table to the config (committed nodes,\n"
            "price, SLO, credit tiers) to see availability\n"
            "and credits here; see `gpufleet help sla`."
        )
    if sla.availability_pct is None:
        role, verdict = "muted", "not measured yet"
    elif sla.availability_pct >= sla.slo_pct:
        role, verdict = "sla-ok", "meets SLO so far"
    else:
        role, verdict = "sla-breach", "below SLO so far"
    # The SLA ledger's own words where it gave them; a summary without them (no ledger
    # behind the facade) falls back to the bare figures.
    down = sla.down_text or f"{sla.down_node_hours:.1f} node-hours"
    money = sla.money_text or fmt.money(sla.credit_owed, sla.currency)
    # A withheld claim's money_text already says it is a projection, not money owed.
    credit = "" if sla.money_withheld else f"{_credit_words(sla)} "
    notes = "".join(f"\n[$muted]{escape(n)}[/]" for n in sla.notes)
    return (
        f"[b ${role}]{fmt.pct(sla.availability_pct, 3)}[/] available, {sla.month} to date\n"
        f"SLO {sla.slo_pct:g}% · [${role}]{verdict}[/] · [$muted]{escape(sla.reading)}[/]\n"
        f"Downtime {escape(down)}\n"
        f"Credit tier {sla.tier_credit_pct:g}% · {credit}"
        f"[b]{escape(money)}[/] ({escape(sla.credit_model)}){notes}"
    )


def _credit_words(sla: SlaSummary) -> str:
    # A tier's credit is a share of the whole month's bill, so before the month ends it
    # is what the month would earn if availability stayed where it is, not money owed
    # yet; a pro-rata credit adds up the downtime seen so far.
    if sla.credit_model == "tiered":
        return "at month end if it stays here"
    return "owed so far"
