"""Pure layout of the fleet grid: one line of (text, role) cells per node, and its header."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleet.facade import NodeSnapshot
from tui import format as fmt
from tui.draw import GLYPH_UNKNOWN, Cell, Role, gpu_cells, port_cell
from tui.node_view import NodeSummary

STATUS_W = 11
MAX_PORTS = 16


@dataclass(frozen=True, slots=True)
class GridLayout:
    """Column widths; when they change every cached line is redrawn."""

    name_w: int = 9
    gpu_slots: int = 8
    port_slots: int = 8

    @property
    def width(self) -> int:
        """Cells before the free-form "why" column (which is cropped to the view)."""
        gpus, ports = max(4, self.gpu_slots), max(5, self.port_slots)
        return 2 + self.name_w + 1 + STATUS_W + 1 + gpus + 2 + 6 + ports + 2 + 8 + 6 + 12


def layout_for(nodes: Sequence[NodeSnapshot]) -> GridLayout:
    if not nodes:
        return GridLayout()
    return GridLayout(
        name_w=max(9, max(len(n.name) for n in nodes)),
        gpu_slots=max(max(n.expected_gpus, len(n.gpus)) for n in nodes),
        port_slots=min(MAX_PORTS, max(len(n.ports) for n in nodes)),
    )


def status_cell(node: NodeSnapshot) -> Cell:
    """Node state in words: up, BROKEN, unreachable, or the connection status."""
    if node.state == "unreachable":
        return "unreachable", "gpu-lost"
    if node.status in ("connecting", "stale"):
        return node.status, "gpu-warn"
    if node.status != "streaming":
        return node.status, "gpu-lost"
    if node.state == "broken":
        return "BROKEN", "gpu-failed"
    return "up", "gpu-ok"


NO_DATA = NodeSummary(None, None, None, "unknown", 0, False)


def has_live_data(node: NodeSnapshot) -> bool:
    """Streaming or briefly stale: the GPU values mean something. Otherwise show none."""
    return node.state != "unreachable" and node.status in ("streaming", "stale")


def no_data_cells(node: NodeSnapshot) -> list[Cell]:
    return [(GLYPH_UNKNOWN, "gpu-unknown")] * max(node.expected_gpus, len(node.gpus))


def _why(node: NodeSnapshot) -> str:
    """Broken reasons, or the connection's reason while it is not streaming."""
    if node.broken_reasons:
        return "; ".join(node.broken_reasons)
    return node.status_reason if node.status != "streaming" else ""


def node_cells(node: NodeSnapshot, summary: NodeSummary, layout: GridLayout) -> list[Cell]:
    """The line of one node, padded to the layout's columns."""
    status, status_role = status_cell(node)
    cells: list[Cell] = [("  ", "text"), (node.name.ljust(layout.name_w + 1), "text")]
    cells.append((status.ljust(STATUS_W + 1)[: STATUS_W + 1], status_role))
    live = has_live_data(node)
    gpus = gpu_cells(node.gpus, node.expected_gpus) if live else no_data_cells(node)
    cells.extend(gpus)
    cells.append((" " * (max(4, layout.gpu_slots) - len(gpus) + 2), "text"))
    if not live:
        summary = NO_DATA
    util = "N/A" if summary.util is None else f"{summary.util:.0f}%"
    cells.append((util.rjust(4) + "  ", "muted" if summary.util is None else "text"))
    ports = [port_cell(p) for p in node.ports[:MAX_PORTS]]
    cells.extend(ports)
    cells.append((" " * (max(5, layout.port_slots) - len(ports) + 2), "text"))
    cells.append((fmt.watts(summary.power_w).rjust(6) + "  ", "text"))
    hot: Role = "gpu-warn" if (summary.hottest_c or 0) >= 85 else "text"
    cells.append((fmt.celsius(summary.hottest_c).rjust(4) + "  ", hot))
    cells.append((_why(node), "muted"))
    return cells


def header_cells(layout: GridLayout) -> list[Cell]:
    gpu_w = max(4, layout.gpu_slots) + 2
    port_w = max(5, layout.port_slots) + 2
    text = (
        "  "
        + "node".ljust(layout.name_w + 1)
        + "status".ljust(STATUS_W + 1)
        + "GPUs".ljust(gpu_w)
        + "util".rjust(4)
        + "  "
        + "ports".ljust(port_w)
        + "power".rjust(6)
        + "  "
        + "temp".rjust(4)
        + "  "
        + "why"
    )
    return [(text, "muted")]


def merge(cells: Sequence[Cell]) -> list[Cell]:
    """Adjacent cells with the same role joined (fewer segments to draw)."""
    out: list[Cell] = []
    for text, role in cells:
        if out and out[-1][1] == role:
            out[-1] = (out[-1][0] + text, role)
        else:
            out.append((text, role))
    return out
