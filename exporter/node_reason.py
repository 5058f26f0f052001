"""``gpufleet_node_reason_info``: why a node is not up, in the words ``gpufleet check``
and the grid lead with (its cause first: ``GPU 5 lost (XID 79)``).

One series per node that is not up, value 1; a node that is up has none, so the family
is as small as the fleet's trouble. The reason is the node's first broken reason,
already cause-first; node text reaches a label cleaned and bounded.
"""

from __future__ import annotations

from collectors.sanitize import clean_text
from exporter.families import gauge, label_pairs
from fleet.model import FleetSnapshot

REASON_LIMIT = 120  # characters of a reason label: the cause, not a report
NODE_REASON = gauge(
    "gpufleet_node_reason_info",
    "Why the node is not up (its cause first); 1 for each node not up, absent when up",
    ("node", "state", "reason"),
)


def reason_series(snapshot: FleetSnapshot | None) -> list[tuple[str, str, str]]:
    """``(node, state, reason)`` for each node that is not up, in the snapshot's order."""
    series: list[tuple[str, str, str]] = []
    for node in () if snapshot is None else snapshot.nodes:
        if node.state != "up":
            first = node.broken_reasons[0] if node.broken_reasons else ""
            series.append((node.name, node.state, clean_text(first, REASON_LIMIT)))
    return series


def render_node_reasons(snapshot: FleetSnapshot | None) -> str:
    """The family's text: HELP, TYPE and one line per node that is not up."""
    name, names = NODE_REASON.name, NODE_REASON.labels
    lines = [NODE_REASON.header()]
    lines.extend(f"{name}{{{label_pairs(names, s)}}} 1\n" for s in reason_series(snapshot))
    return "".join(lines)
