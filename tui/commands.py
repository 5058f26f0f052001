"""Command palette entries: every dashboard action once, gpufleet's themes, and one entry
per node to open it. Textual's system commands are not offered: they would list "Keys"
and "Quit" a second time, every built-in theme, and a screenshot that a server cannot
show."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui.app import GpuFleetApp

from themes import THEME_NAMES

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Filter nodes", "filter", "Name, hostlist, state:broken, why:xid, gpu:7, probe:any"),
    ("Sort nodes", "sort", "Cycle the order: name, utilization, health, memory, power, temp"),
    ("Reverse sort order", "reverse_sort", "Turn the grid's order around"),
    ("Map of the fleet", "toggle_map", "One cell per node, for 1,000+ nodes (m)"),
    ("Event log", "event_log", "What happened: transitions, XIDs, probes, connections (l)"),
    ("Acknowledge node", "acknowledge", "Known bad: stays visible, stops alerting (a)"),
    ("Probe node", "probe", "Run the quick probe suite on the node under the cursor (p)"),
    ("Probe suspects", "probe_suspects", "Probe every broken or suspect node (P)"),
    ("ssh into node", "ssh", "Suspend the dashboard and log into the node (S)"),
    ("Utilization window", "window", "Cycle the plot window: 1 h, 24 h, 7 d"),
    ("Export utilization history", "export", "Write history to parquet, CSV or JSON"),
    ("Next theme", "next_theme", ", ".join(THEME_NAMES)),
    ("Keys", "help", "Every key and mouse action the dashboard answers to"),
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
        commands: list[tuple[str, Callable[[], object], str]] = [
            (title, partial(app.run_action, action), help_text)
            for title, action, help_text in ACTIONS
            if app.check_action(action, ()) is not False  # e.g. probes under --read-only
        ]
        for name in THEME_NAMES:
            commands.append((f"Theme {name}", partial(app.use_theme, name), "Switch to this theme"))
        return commands

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
