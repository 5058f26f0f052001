"""The fleet header: nodes streaming, broken nodes, healthy GPUs, utilization, SLA."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from fleet.facade import FleetSnapshot
from tui.fleet_digest import FleetDigest
from tui.header_view import header_tiles

TILES = ("nodes", "broken", "gpus", "util", "sla")
TITLES = {"nodes": "Nodes", "broken": "Broken", "gpus": "GPUs", "util": "Utilization", "sla": "SLA"}


class Tile(Widget):
    """A header tile: markup that repaints without a layout pass (its size never changes)."""

    text: reactive[str] = reactive("", layout=False)

    def render(self) -> Content:
        return Content.from_markup(self.text)


class FleetHeader(Horizontal):
    """Five tiles; state classes mark what needs attention (-connecting, -bad, -breach)."""

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None, digest: FleetDigest | None = None) -> None:
        super().__init__(id=id)
        self._digest = digest if digest is not None else FleetDigest()

    def compose(self) -> ComposeResult:
        for tile in TILES:
            widget = Tile(id=f"tile-{tile}", classes="tile")
            widget.border_title = TITLES[tile]
            yield widget

    def watch_snapshot(self, snapshot: FleetSnapshot | None) -> None:
        if not self.is_mounted:
            return
        counts = self._digest.of(snapshot).counts if snapshot is not None else None
        tiles = header_tiles(snapshot, per_node=counts)
        for tile in TILES:
            self.query_one(f"#tile-{tile}", Tile).text = getattr(tiles, tile)
        self.query_one("#tile-nodes").set_class(tiles.connecting, "-connecting")
        self.query_one("#tile-broken").set_class(tiles.any_broken, "-bad")
        self.query_one("#tile-gpus").set_class(tiles.gpus_degraded, "-bad")
        self.query_one("#tile-sla").set_class(tiles.sla_breach, "-breach")

    def on_mount(self) -> None:
        self.watch_snapshot(self.snapshot)
