"""The renderer's parts, joined, are the body a single render gives."""

from __future__ import annotations

from bench.lib.fleet_states import state_ticks
from exporter.text import NODES_PER_CHUNK, ExpositionRenderer


def test_the_parts_are_the_body_in_order() -> None:
    snapshot = state_ticks(NODES_PER_CHUNK + 3, 2)[-1]
    parts = ExpositionRenderer().render_parts(snapshot)
    assert all(parts)  # no empty part is written
    assert b"".join(parts) == ExpositionRenderer().render(snapshot)
