"""Pure drawing of the fleet map: one glyph per node (all-smi style), for 1,000+ nodes."""

from __future__ import annotations

from fleet.facade import NodeSnapshot
from tui.draw import (
    GLYPH_FAIL,
    GLYPH_LOST,
    GLYPH_UNKNOWN,
    GLYPH_WARN,
    IDLE_BELOW_PCT,
    Cell,
    util_bar,
)
from tui.grid_rows import ellipsize, status_cell
from tui.node_view import NodeSummary, is_connecting, node_why

MAP_LEGEND = "█ busy  ▁ idle  ! warn  ✗ broken  ? unreachable  · connecting"


def map_cell(node: NodeSnapshot, summary: NodeSummary) -> Cell:
    """The map glyph of one node: its state, or its mean utilization while it is up."""
    if is_connecting(node):
        return GLYPH_UNKNOWN, "gpu-unknown"
    if node.state == "unreachable":
        return GLYPH_LOST, "gpu-lost"
    if node.state == "broken":
        return GLYPH_FAIL, "gpu-failed"
    if summary.has_warn or node.status == "stale":
        return GLYPH_WARN, "gpu-warn"
    if summary.util is None:
        return GLYPH_UNKNOWN, "gpu-unknown"
    return util_bar(summary.util), "gpu-idle" if summary.util < IDLE_BELOW_PCT else "gpu-ok"


def map_header(node: NodeSnapshot | None, shown: int, width: int) -> list[Cell]:
    """The map's top line: the node under the cursor and why, else the legend."""
    if node is None:
        return [(ellipsize(f"map · no nodes · {MAP_LEGEND}", width), "muted")]
    status, role = status_cell(node)
    head = f"{node.name} "
    why = node_why(node)
    tail = f"  {why}" if why else f"  · {shown} nodes · {MAP_LEGEND}"
    return [
        (head, "text"),
        (status, role),
        (ellipsize(tail, max(0, width - len(head) - len(status))), "muted"),
    ]
