"""A tracked node holds its ~60 attributes in slots: a dict per node cost ~1.1 KiB more."""

from __future__ import annotations

from fleet.settings.health_section import HealthSection
from fleet.state import FleetState
from fleet.state.node import NodeSpec


def test_a_node_track_has_no_attribute_dict() -> None:
    state = FleetState([NodeSpec("a")], HealthSection())
    track = state._nodes["a"]
    assert not hasattr(track, "__dict__")
    track.garbage += 1  # every attribute it sets is a slot
    assert track.garbage == 1
