"""Pure rows of the node screen's tables: each cell is (text, role)."""

from __future__ import annotations

from collections.abc import Sequence

from fleet.facade import BrokenInterval, GpuSeries, GpuSnapshot, NodeSnapshot, PortSnapshot
from tui import format as fmt
from tui.draw import VERDICT_GLYPH, VERDICT_ROLE, Cell, Role, port_cell, port_problem, sparkline
from tui.job_lines import jobs_line
from tui.node_view import is_connecting

SPARK_W = 16
TELEMETRY_COLUMNS = (
    "GPU",
    "health",
    "job",
    "util",
    "",
    "power",
    "",
    "temp",
    "",
    "memory",
    "SM clock",
    "throttle reasons",
)
RELIABILITY_COLUMNS = (
    "GPU",
    "serial / UUID",
    "ECC vol c/u",
    "ECC agg c/u",
    "retired s/d",
    "row remap c/u",
    "PCIe replay",
    "NVLink up",
    "CRC",
    "replay/recov",
    "reasons",
    "unreadable fields",
)
PORT_COLUMNS = (
    "port",
    "kind",
    "state",
    "phys",
    "rate / expected",
    "link_downed",
    "symbol err",
    "rcv err",
    "xmit discard",
    "rx",
    "tx",
    "reasons",
    "raw counters",
)


def _t(text: str) -> Cell:
    return (text, "text")


def telemetry_row(g: GpuSnapshot, series: GpuSeries | None, job: str = "") -> list[Cell]:
    """One GPU's line; ``job``: the scheduler jobs on it (``gpu_job_text``), "" for none."""
    util_s = series.util if series else ()
    power_s = series.power_w if series else ()
    temp_s = series.temp_c if series else ()
    health: Cell = (f"{VERDICT_GLYPH[g.verdict]} {g.verdict}", VERDICT_ROLE[g.verdict])
    throttle = fmt.clock_reasons(g.clock_reasons)
    hot = g.clock_reasons is not None and bool(g.clock_reasons & (0x8 | 0x40 | 0x80))
    return [
        _t(str(g.index)),
        health,
        (job, "text") if job else ("—", "muted"),
        (sparkline(util_s, SPARK_W, top=100.0), "gpu-ok"),
        _t(fmt.pct(g.util_gpu, 0)),
        (sparkline(power_s, SPARK_W, top=g.power_limit_w), "gpu-ok"),
        _t(fmt.watts(g.power_w)),
        (sparkline(temp_s, SPARK_W, top=100.0), "gpu-ok"),
        ("N/A" if g.temp_c is None else fmt.celsius(g.temp_c), "gpu-warn" if hot else "text"),
        _t(f"{fmt.gib(g.mem_used_bytes)} / {fmt.gib(g.memory_total_bytes)}"),
        _t(fmt.mhz(g.sm_clock_mhz) + ("" if g.pstate is None else f" P{g.pstate}")),
        (throttle, "gpu-warn" if hot else "muted"),
    ]


def _pair(a: int | None, b: int | None) -> str:
    return f"{fmt.count(a)}/{fmt.count(b)}"


def reliability_row(g: GpuSnapshot) -> list[Cell]:
    retired = _pair(g.retired_sbe, g.retired_dbe) + (" pending" if g.retired_pending else "")
    remap = _pair(g.remap_corr, g.remap_unc)
    remap_role: Role = "text"
    if g.remap_failure:
        remap, remap_role = remap + " FAILED", "gpu-failed"
    elif g.remap_pending:
        remap, remap_role = remap + " pending", "gpu-warn"
    nvlink_bad = (g.nvlink_active or 0) < (g.nvlink_total or 0)
    crc_role: Role = "link-degraded" if (g.nvlink_crc_rate or 0) > 0 else "text"
    replay = "N/A" if g.nvlink_replay_delta is None else f"+{g.nvlink_replay_delta}"
    recov = "N/A" if g.nvlink_recovery_delta is None else f"+{g.nvlink_recovery_delta}"
    return [
        _t(str(g.index)),
        (g.serial or g.uuid, "muted"),
        (_pair(g.ecc_corr_vol, g.ecc_unc_vol), "gpu-failed" if g.ecc_unc_vol else "text"),
        _t(_pair(g.ecc_corr_agg, g.ecc_unc_agg)),
        (retired, "gpu-warn" if g.retired_pending else "text"),
        (remap, remap_role),
        _t(fmt.count(g.pcie_replay)),
        (_pair(g.nvlink_active, g.nvlink_total), "link-down" if nvlink_bad else "text"),
        (fmt.rate(g.nvlink_crc_rate), crc_role),
        (f"{replay}/{recov}", "link-down" if g.nvlink_recovery_delta else "text"),
        ("; ".join(g.reasons) or "—", VERDICT_ROLE[g.verdict] if g.reasons else "muted"),
        (unreadable_fields(g), "gpu-unknown"),
    ]


def unreadable_fields(g: GpuSnapshot) -> str:
    """Fields that failed on the last sample, with the NVML error: why a value is N/A."""
    return ", ".join(f"{field} ({error})" for field, error in g.field_errors) or "—"


def port_row(p: PortSnapshot) -> list[Cell]:
    glyph, role = port_cell(p)
    downed = f"{fmt.count(p.link_downed)} (+{p.link_downed_delta})"
    return [
        (f"{glyph} {p.name}", role),
        _t(p.kind),
        (p.state or "N/A", role),
        _t(p.phys_state or "N/A"),
        (
            f"{fmt.gbps(p.rate_gbps)} / {fmt.gbps(p.expected_rate_gbps)}",
            "link-degraded" if port_problem(p) == "degraded" else "text",
        ),
        (downed, "link-down" if p.link_downed_delta else "text"),
        _t(fmt.rate(p.symbol_error_rate)),
        _t(fmt.rate(p.rcv_error_rate)),
        _t(fmt.rate(p.xmit_discard_rate)),
        _t(fmt.bytes_rate(p.rx_bytes_per_s)),
        _t(fmt.bytes_rate(p.tx_bytes_per_s)),
        ("; ".join(p.reasons) or "—", role if p.reasons else "muted"),
        (" ".join(f"{k}={fmt.count(v)}" for k, v in p.counters) or "—", "muted"),
    ]


def interval_lines(intervals: Sequence[BrokenInterval], now: float) -> list[str]:
    out = []
    for i in intervals:
        end = "now" if i.end is None else fmt.stamp(i.end)
        length = fmt.duration((i.end or now) - i.start) if i.start is not None else "N/A"
        why = "; ".join(i.reasons) or "no reason recorded"
        out.append(f"{i.state:11} {fmt.stamp(i.start)} → {end} ({length})  {why}")
    return out


def node_summary(node: NodeSnapshot, now: float) -> str:
    state = {"up": "up", "broken": "BROKEN", "unreachable": "UNREACHABLE"}[node.state]
    if is_connecting(node):  # start-up: nothing failed, the node was not heard from yet
        state = "connecting"
    bits = [
        f"{node.name} · {state} since {fmt.stamp(node.state_since)}",
        f"status {node.status}" + (f" ({node.status_reason})" if node.status_reason else ""),
        f"last seen {fmt.ago(node.last_seen, now)}",
    ]
    soft = [
        f"model {node.model or 'N/A'}",
        f"driver {node.driver or 'N/A'}",
        f"CUDA {node.cuda or 'N/A'}",
        f"agent {node.agent_version or 'N/A'}",
        f"GPUs {node.healthy_gpus}/{max(node.expected_gpus, len(node.gpus))} healthy",
    ]
    jobs = jobs_line(node)
    return " · ".join(bits) + "\n" + " · ".join(soft) + ("" if jobs is None else "\n" + jobs)
