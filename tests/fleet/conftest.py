"""Fixtures of the fleet room: a node feed and a fleet state already streaming."""

from __future__ import annotations

import pytest

from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start


@pytest.fixture
def health() -> HealthSection:
    return HealthSection()


@pytest.fixture
def feed() -> NodeFeed:
    return NodeFeed()


@pytest.fixture
def state(feed: NodeFeed, health: HealthSection) -> FleetState:
    fleet = FleetState([NodeSpec(feed.name), NodeSpec("gpu-002")], health)
    start(fleet, feed)
    return fleet
