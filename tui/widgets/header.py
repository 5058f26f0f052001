"""The fleet header: nodes streaming, broken nodes, healthy GPUs, utilization, SLA."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Static

from fleet.facade import FleetSnapshot
from tui.header_view import header_tiles

TILES = ("nodes", "broken", "gpus", "util", "sla")
TITLES = {"nodes": "Nodes", "broken": "Broken", "gpus": "GPUs", "util": "Utilization", "sla": "SLA"}


class FleetHeader(Horizontal):
    """Five tiles; state classes mark what needs attention (-connecting, -bad, -breach)."""

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True)

    def compose(self) -> ComposeResult:
        for tile in TILES:
            static = Static(id=f"tile-{tile}", classes="tile")
            static.border_title = TITLES[tile]
            yield static

    def watch_snapshot(self, snapshot: FleetSnapshot | None) -> None:
        if not self.is_mounted:
            return
        tiles = header_tiles(snapshot)
        for tile in TILES:
            self.query_one(f"#tile-{tile}", Static).update(getattr(tiles, tile))
        self.query_one("#tile-nodes").set_class(tiles.connecting, "-connecting")
        self.query_one("#tile-broken").set_class(tiles.any_broken, "-bad")
        self.query_one("#tile-gpus").set_class(tiles.gpus_degraded, "-bad")
        self.query_one("#tile-sla").set_class(tiles.sla_breach, "-breach")

    def on_mount(self) -> None:
        self.watch_snapshot(self.snapshot)
