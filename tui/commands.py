"""Command palette entries for the dashboard's actions, and one per node to open it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui.app import GpuFleetApp

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Filter nodes", "filter", "Show only nodes matching a name, hostlist or state:..."),
    ("Sort nodes", "sort", "Cycle the grid order: name, utilization, health"),
    ("Utilization window", "window", "Cycle the plot window: 1 h, 24 h, 7 d"),
    ("Export utilization history", "export", "Write history to parquet, CSV or JSON"),
    ("Next theme", "next_theme", "gpufleet-dark, gpufleet-light, gpufleet-contrast"),
    ("Keys", "help", "Every key the dashboard answers to"),
    ("Quit", "quit", "Leave gpufleet"),
)
MAX_NODE_HITS = 20


class FleetCommands(Provider):
    """The dashboard's actions and 'Open node NAME'."""

    @property
    def fleet_app(self) -> GpuFleetApp:
        return cast("GpuFleetApp", self.app)

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.fleet_app
        return [
            (title, partial(app.run_action, action), help_text)
            for title, action, help_text in ACTIONS
        ]

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            if (score := matcher.match(title)) > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
        snapshot = self.fleet_app.shown
        if snapshot is None or not query.strip():
            return
        hits = 0
        for node in snapshot.nodes:
            title = f"Open node {node.name}"
            if (score := matcher.match(title)) > 0:
                open_it = partial(self.fleet_app.open_node, node.name)
                yield Hit(score, matcher.highlight(title), open_it, help=f"state {node.state}")
                hits += 1
                if hits >= MAX_NODE_HITS:
                    return
