"""Messages between the app, its screens and widgets."""

from __future__ import annotations

from textual.message import Message

from fleet.facade import FleetSnapshot, UtilizationPoint


class SnapshotArrived(Message):
    """A new FleetSnapshot from the facade; a queued older one is superseded."""

    def __init__(self, snapshot: FleetSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotArrived)


class OpenNode(Message):
    """Open the node screen for ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class SeriesLoaded(Message):
    """Utilization history for the plot, fetched by a worker."""

    def __init__(self, window_s: float, points: list[UtilizationPoint]) -> None:
        super().__init__()
        self.window_s = window_s
        self.points = points

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SeriesLoaded)
