"""Pure drawing: glyphs, bars and sparklines as (text, role) cells, tested without an app.

Glyphs are chosen to be readable without colour (see docs/dashboard.md):
a healthy GPU is a bar ▁..█ by utilization, ``!`` warn, ``✗`` fail, ``?`` lost or
missing, ``·`` no data. Ports: ``●`` up, ``◐`` degraded, ``○`` down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from fleet.facade import GpuSnapshot, PortSnapshot, ProbeVerdict, Verdict
from fleet.model import PortAlarms
from tui.node_facts import PortFacts

Role = Literal[
    "gpu-ok",
    "gpu-idle",
    "gpu-warn",
    "gpu-failed",
    "gpu-lost",
    "gpu-unknown",
    "link-up",
    "link-down",
    "link-degraded",
    "muted",
    "text",
]
Cell = tuple[str, Role]

BARS = "▁▂▃▄▅▆▇█"
SPARK = "▁▂▃▄▅▆▇█"
IDLE_BELOW_PCT = 5.0
GLYPH_WARN = "!"
GLYPH_FAIL = "✗"
GLYPH_LOST = "?"
GLYPH_UNKNOWN = "·"
PORT_UP, PORT_DEGRADED, PORT_DOWN = "●", "◐", "○"

VERDICT_GLYPH: dict[Verdict, str] = {
    "ok": "✓",
    "warn": GLYPH_WARN,
    "fail": GLYPH_FAIL,
    "lost": GLYPH_LOST,
    "unknown": GLYPH_UNKNOWN,
}
VERDICT_ROLE: dict[Verdict, Role] = {
    "ok": "gpu-ok",
    "warn": "gpu-warn",
    "fail": "gpu-failed",
    "lost": "gpu-lost",
    "unknown": "gpu-unknown",
}


def util_bar(util: float | None) -> str:
    """One block whose height follows utilization (0-100%); no data is ``·``."""
    if util is None:
        return GLYPH_UNKNOWN
    level = int(max(0.0, min(100.0, util)) / 100.0 * (len(BARS) - 1) + 0.5)
    return BARS[level]


def gpu_cell(gpu: GpuSnapshot | None) -> Cell:
    """The grid cell of one GPU slot (None: an expected GPU that is not visible)."""
    if gpu is None:
        return GLYPH_LOST, "gpu-lost"
    return gpu_glyph(gpu.lost, gpu.verdict, gpu.probe_verdict, gpu.util_gpu)


def gpu_glyph(
    lost: bool, verdict: Verdict, probe_verdict: ProbeVerdict | None, util: float | None
) -> Cell:
    """The grid cell of a visible GPU from its facts and utilization (no object needed:
    the grid reads these from the briefs and the tick's columns)."""
    if lost or verdict == "lost":
        return GLYPH_LOST, "gpu-lost"
    if verdict == "fail":
        return GLYPH_FAIL, "gpu-failed"
    if verdict == "warn":
        return GLYPH_WARN, "gpu-warn"
    # A probe's finding marks a GPU whose telemetry looks fine, until a later probe clears it.
    if probe_verdict == "fail":
        return GLYPH_FAIL, "gpu-failed"
    if probe_verdict in ("slow", "straggler"):
        return GLYPH_WARN, "gpu-warn"
    if util is None:
        return GLYPH_UNKNOWN, "gpu-unknown"
    role: Role = "gpu-idle" if util < IDLE_BELOW_PCT else "gpu-ok"
    return util_bar(util), role


def gpu_cells(gpus: Sequence[GpuSnapshot], expected: int) -> list[Cell]:
    """One cell per GPU slot: the visible GPUs, then ``?`` for each missing one."""
    cells = [gpu_cell(g) for g in gpus]
    cells.extend(gpu_cell(None) for _ in range(max(0, expected - len(gpus))))
    return cells


PortProblem = Literal["up", "degraded", "failing", "down"]


def port_problem(port: PortSnapshot) -> PortProblem:
    """How a port looks on the grid: down, failing while up (a flap or error burst that
    still holds a fail verdict), degraded (slow, erroring) or up."""
    return link_problem(port, port)


def link_problem(link: PortFacts, alarms: PortAlarms | PortSnapshot) -> PortProblem:
    """:func:`port_problem` from a port's brief and its error readings (no object needed)."""
    state = (link.state or "").upper()
    phys = (link.phys_state or "LinkUp").lower()
    if state in ("DOWN", "INIT", "ARMED") or phys != "linkup":
        return "down"
    if link.verdict == "fail":
        return "failing"
    if link.state is None:
        return "degraded"
    if link.verdict == "warn" or alarms.link_downed_delta > 0:
        return "degraded"
    slow = link.rate_gbps is not None and link.rate_gbps < (link.expected_rate_gbps or 0)
    if slow:
        return "degraded"
    if (alarms.symbol_error_rate or 0) > 0 or (alarms.rcv_error_rate or 0) > 0:
        return "degraded"
    return "up"


def port_cell(port: PortSnapshot) -> Cell:
    return problem_cell(port_problem(port))


def problem_cell(problem: PortProblem) -> Cell:
    """The grid cell of a port in ``problem``."""
    if problem == "down":
        return PORT_DOWN, "link-down"
    if problem == "failing":  # the link is up again: half glyph, but the failure colour
        return PORT_DEGRADED, "link-down"
    if problem == "degraded":
        return PORT_DEGRADED, "link-degraded"
    return PORT_UP, "link-up"


def sparkline(values: Sequence[float | None], width: int, top: float | None = None) -> str:
    """The last ``width`` values as ▁..█, scaled to ``top`` (or the maximum); None is a gap."""
    tail = list(values)[-width:] if width > 0 else []
    known = [v for v in tail if v is not None]
    ceiling = top if top is not None else (max(known) if known else 0.0)
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif ceiling <= 0:
            out.append(SPARK[0])
        else:
            frac = max(0.0, min(1.0, v / ceiling))
            out.append(SPARK[int(frac * (len(SPARK) - 1) + 0.5)])
    return "".join(out).rjust(width)


def progress_bar(done: int, total: int, width: int) -> str:
    """A text progress bar: ``━━━━╺───``."""
    if total <= 0 or width <= 0:
        return ""
    filled = int(width * min(done, total) / total)
    rest = width - filled
    return "━" * filled + ("╺" + "─" * (rest - 1) if rest else "")
