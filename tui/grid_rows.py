"""Pure layout of the fleet grid: one line of (text, role) cells per node, and its header.

The columns that fit the view are chosen per width: node, status and every GPU cell
always show; the figures drop in a fixed order (power, ports, temperature, memory,
utilization) until the ``why`` column has room, and ``why`` ends in an ellipsis when cut.
A ``job`` column (the scheduler jobs on the node's GPUs) stands before ``why`` while some
node has a job: a fleet without job attribution keeps its width for ``why``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from fleet.facade import NodeSnapshot
from tui import format as fmt
from tui.draw import GLYPH_UNKNOWN, Cell, Role, link_problem, problem_cell
from tui.node_facts import gpu_facts, port_facts
from tui.node_view import (
    NO_FIGURES,
    NodeSummary,
    SortKey,
    has_live_data,
    is_connecting,
    natural_key,
    node_why,
)
from tui.tick_columns import gpu_row_cells

STATUS_W = 11
MAX_PORTS = 16
WHY_MIN = 24  # the why column keeps at least this much before a figure column drops
JOB_W = 12  # a few Slurm job ids; a pod UID (36 characters) ends in an ellipsis
WIDE = 400  # a view width that fits every column (tests and previews)
FIGURES: tuple[str, ...] = ("util", "mem", "temp", "ports", "power")  # kept in this order
FIGURE_W = {"util": 6, "mem": 6, "power": 8, "temp": 6}
SORT_COLUMN: dict[SortKey, str] = {
    "name": "node",
    "health": "status",
    "utilization": "util",
    "memory": "mem",
    "power": "power",
    "temp": "temp",
}


@dataclass(frozen=True, slots=True)
class GridLayout:
    """Column widths and the columns shown; when they change every cached line is redrawn."""

    name_w: int = 9
    gpu_slots: int = 8
    port_slots: int = 8
    view_w: int = WIDE
    figures: tuple[str, ...] = FIGURES
    job_w: int = 0  # 0: no node has a job, no job column
    # Worked out once from the fields above (every node line reads them).
    fixed_w: int = field(init=False, compare=False, repr=False)  # cells before ``why``
    why_w: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        base = 2 + self.name_w + 1 + STATUS_W + 1 + max(4, self.gpu_slots) + 2
        fixed = base + sum(self.column_w(c) for c in self.figures) + self.job_span
        object.__setattr__(self, "fixed_w", fixed)
        object.__setattr__(self, "why_w", max(0, self.view_w - fixed))

    def column_w(self, column: str) -> int:
        if column == "ports":
            return max(5, self.port_slots) + 2
        return FIGURE_W[column]

    @property
    def job_span(self) -> int:
        """The job column and the gap after it (0 without the column)."""
        return self.job_w + 2 if self.job_w else 0

    @property
    def width(self) -> int:
        """The line's width (the why column is cut to the view)."""
        return max(self.view_w, self.fixed_w)


def layout_for(
    nodes: Sequence[NodeSnapshot],
    view_w: int = WIDE,
    slots: tuple[Sequence[int], Sequence[int]] | None = None,
) -> GridLayout:
    """The widest layout whose why column keeps WHY_MIN cells in ``view_w``; ``slots``:
    each node's visible GPUs and fabric ports, counted already."""
    if nodes:
        gpus, ports = slots or (
            [len(gpu_facts(n)) for n in nodes],
            [len(port_facts(n)) for n in nodes],
        )
        layout = GridLayout(
            name_w=max(9, max(len(n.name) for n in nodes)),
            gpu_slots=max(map(max, (n.expected_gpus for n in nodes), gpus)),
            port_slots=min(MAX_PORTS, max(ports)),
            view_w=view_w,
            job_w=JOB_W if any(n.jobs for n in nodes) else 0,
        )
    else:
        layout = GridLayout(view_w=view_w)
    for keep in range(len(FIGURES), -1, -1):
        candidate = replace(layout, figures=FIGURES[:keep])
        if candidate.why_w >= WHY_MIN:
            return candidate
    return replace(layout, figures=())


def status_cell(node: NodeSnapshot) -> Cell:
    """Node state in words: up, BROKEN, unreachable, connecting, or the connection status."""
    if is_connecting(node):
        return "connecting", "gpu-unknown"
    if node.state == "unreachable":
        return "unreachable", "gpu-lost"
    if node.status == "stale":
        return node.status, "gpu-warn"
    if node.status != "streaming":
        return node.status, "gpu-lost"
    if node.state == "broken":
        return "BROKEN", "gpu-failed"
    return "up", "gpu-ok"


NO_DATA = NodeSummary("unknown", 0, False, figures=NO_FIGURES)


def no_data_cells(node: NodeSnapshot) -> list[Cell]:
    return [(GLYPH_UNKNOWN, "gpu-unknown")] * max(node.expected_gpus, len(gpu_facts(node)))


def ellipsize(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ending in ``…`` when something was cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"


def _figure_cells(
    column: str, node: NodeSnapshot, summary: NodeSummary, layout: GridLayout
) -> list[Cell]:
    if column == "util":
        util = "N/A" if summary.util is None else f"{summary.util:.0f}%"
        return [(util.rjust(4) + "  ", "muted" if summary.util is None else "text")]
    if column == "mem":
        mem = "N/A" if summary.mem_pct is None else f"{summary.mem_pct:.0f}%"
        return [(mem.rjust(4) + "  ", "muted" if summary.mem_pct is None else "text")]
    if column == "ports":
        ports = port_cells(node)
        pad = " " * (max(5, layout.port_slots) - len(ports) + 2)
        return [*ports, (pad, "text")]
    if column == "power":
        return [(fmt.watts(summary.power_w).rjust(6) + "  ", "text")]
    hot: Role = "gpu-warn" if (summary.hottest_c or 0) >= 85 else "text"
    return [(fmt.celsius(summary.hottest_c).rjust(4) + "  ", hot)]


def node_job_text(node: NodeSnapshot) -> str:
    """The jobs on the node's GPUs, each id once, in natural order (``999,4242``)."""
    return ",".join(sorted({i.job for i in node.jobs}, key=natural_key))


def port_cells(node: NodeSnapshot) -> list[Cell]:
    """The first MAX_PORTS fabric ports' cells, from their briefs and error readings."""
    links, alarms = port_facts(node)[:MAX_PORTS], node.port_alarms[:MAX_PORTS]
    return [problem_cell(link_problem(p, a)) for p, a in zip(links, alarms, strict=True)]


def node_cells(
    node: NodeSnapshot, summary: NodeSummary, layout: GridLayout, ack: str | None = None
) -> list[Cell]:
    """The line of one node, padded to the layout's columns; ``ack``: the operator's
    acknowledgement, shown first in the why column."""
    status, status_role = status_cell(node)
    cells: list[Cell] = [("  ", "text"), (node.name.ljust(layout.name_w + 1), "text")]
    cells.append((status.ljust(STATUS_W + 1)[: STATUS_W + 1], status_role))
    live = has_live_data(node)
    gpus = gpu_row_cells(node, summary.columns) if live else no_data_cells(node)
    cells.extend(gpus)
    cells.append((" " * (max(4, layout.gpu_slots) - len(gpus) + 2), "text"))
    if not live:
        summary = NO_DATA
    for column in layout.figures:
        cells.extend(_figure_cells(column, node, summary, layout))
    if layout.job_w:
        cells.append((ellipsize(node_job_text(node), layout.job_w).ljust(layout.job_span), "text"))
    why = node_why(node)
    if ack is not None:
        why = f"[ack {ack}] {why}"
    cells.append((ellipsize(why, layout.why_w), "muted"))
    return cells


def _label(text: str, column: str, sort_column: str, arrow: str) -> str:
    return text + arrow if column == sort_column else text


def _figure_title(column: str, width: int, sort_column: str, arrow: str) -> str:
    """Right-aligned over its figures; the sort arrow takes the gap after it."""
    if column == "ports":
        return _label(column, column, sort_column, arrow).ljust(width)
    mark = arrow if column == sort_column else " "
    return column.rjust(width - 2) + mark + " "


def header_cells(
    layout: GridLayout, sort_key: SortKey = "name", reverse: bool = False
) -> list[Cell]:
    """The column titles; the sorted column carries ▲ (ascending) or ▼ (descending)."""
    sort_column = SORT_COLUMN[sort_key]
    # Figures and health sort worst/highest first by default: the arrow says which way.
    descending = (sort_key != "name") != reverse
    arrow = "▼" if descending else "▲"
    gpu_w = max(4, layout.gpu_slots) + 2
    text = (
        "  "
        + _label("node", "node", sort_column, arrow).ljust(layout.name_w + 1)
        + _label("status", "status", sort_column, arrow).ljust(STATUS_W + 1)
        + "GPUs".ljust(gpu_w)
    )
    for column in layout.figures:
        text += _figure_title(column, layout.column_w(column), sort_column, arrow)
    if layout.job_w:
        text += "job".ljust(layout.job_span)
    text += "why"
    return [(text, "muted")]


def column_at(layout: GridLayout, x: int) -> SortKey | None:
    """The sort key of the column under ``x`` on the header line (a click sorts by it)."""
    spans: list[tuple[int, SortKey | None]] = [
        (2 + layout.name_w + 1, "name"),
        (STATUS_W + 1, "health"),
        (max(4, layout.gpu_slots) + 2, "health"),
    ]
    by_column = {v: k for k, v in SORT_COLUMN.items()}
    spans.extend((layout.column_w(c), by_column.get(c)) for c in layout.figures)
    spans.append((layout.job_span, None))
    start = 0
    for width, key in spans:
        if start <= x < start + width:
            return key
        start += width
    return None


def merge(cells: Sequence[Cell]) -> list[Cell]:
    """Adjacent cells with the same role joined (fewer segments to draw)."""
    out: list[Cell] = []
    for text, role in cells:
        if out and out[-1][1] == role:
            out[-1] = (out[-1][0] + text, role)
        else:
            out.append((text, role))
    return out
