"""One notification for the alerts that arrive together.

A fleet that starts with several broken nodes, or a switch that takes a rack's links
down, sends many alerts in the same second; one toast each would stack over the grid
(at 80x24 three of them hide half of it). Alerts gathered for a moment are shown as one
toast: the node's name when they are all about one node, else how many, and the first
few lines. The bell and the terminal notifications still go out per alert.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.facade import Alert

GATHER_S = 0.5  # alerts this close together share a toast
SHOWN = 4


def alert_toast(batch: Sequence[Alert]) -> tuple[str, str]:
    """(title, message) of the toast for ``batch`` (oldest first, not empty)."""
    nodes = list(dict.fromkeys(a.node for a in batch))
    held = sum(a.suppressed_before for a in batch)
    one_node = len(nodes) == 1
    lines = [a.text if one_node else f"{a.node}: {a.text}" for a in batch[:SHOWN]]
    if len(batch) > SHOWN:
        lines.append(f"… and {len(batch) - SHOWN} more: l for the event log")
    if held:
        lines.append(f"(+{held} held back)")
    if one_node:
        return f"Alert {nodes[0]}", "\n".join(lines)
    return f"{len(batch)} alerts on {len(nodes)} nodes", "\n".join(lines)
