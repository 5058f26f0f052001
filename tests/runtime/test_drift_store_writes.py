"""When the inventory store is written: first sightings together, known changes at once.

A fleet connecting used to write the whole ``inventory.json`` on every tick a node came
up (fleet.drift). First sightings now wait up to ``FIRST_SIGHTINGS_SAVE_S``; a change
of something known (a swap) is written on its tick, and the runtime's stop writes what
is left, so a clean restart forgets nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from fleet.drift import FIRST_SIGHTINGS_SAVE_S, STORE_NAME, DriftTracker
from fleet.model import FleetSnapshot
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime
from tests.fleet.test_drift import GPUS, NODE, T0, gpu

OTHER = replace(NODE, name="gpu-002")


def _two(t: float) -> FleetSnapshot:
    return FleetSnapshot(t, (NODE, OTHER))


def _stored(store: Path) -> dict[str, object]:
    data = json.loads(store.read_text(encoding="utf-8"))
    return {"expected": sorted(data["expected"]), "slots": data["slots"]}


def test_first_sightings_are_written_together_not_on_every_tick(tmp_path: Path) -> None:
    store = tmp_path / STORE_NAME
    tracker = DriftTracker(store)
    tracker.apply(FleetSnapshot(T0, (NODE,)))  # the first write comes at once
    assert _stored(store)["expected"] == ["gpu-001"]
    tracker.apply(_two(T0 + 1))  # a second node comes up a tick later
    assert _stored(store)["expected"] == ["gpu-001"]
    tracker.apply(_two(T0 + FIRST_SIGHTINGS_SAVE_S))
    assert _stored(store)["expected"] == ["gpu-001", "gpu-002"]


def test_a_swap_is_written_on_its_tick(tmp_path: Path) -> None:
    store = tmp_path / STORE_NAME
    tracker = DriftTracker(store)
    tracker.apply(FleetSnapshot(T0, (NODE,)))
    swapped = replace(NODE, gpus=(gpu(0, "NEW"), *GPUS[1:]))
    events = tracker.apply(FleetSnapshot(T0 + 1, (swapped,))).new_events
    assert [e.kind for e in events] == ["gpu_swap"]
    slots = _stored(store)["slots"]
    assert isinstance(slots, dict) and slots["gpu-001"]["0"] == ["GPU-NEW", "NEW"]


async def test_the_runtime_stop_writes_first_sightings_a_restart_needs(tmp_path: Path) -> None:
    runtime = FleetRuntime(Config(), [], data_dir=tmp_path)
    store = tmp_path / STORE_NAME
    runtime.drift.apply(FleetSnapshot(T0, (NODE,)))
    runtime.drift.apply(_two(T0 + 1))
    assert _stored(store)["expected"] == ["gpu-001"]
    await runtime.stop()
    assert _stored(store)["expected"] == ["gpu-001", "gpu-002"]
    # After the restart, a board swapped in gpu-002 while the controller was down counts.
    restarted = DriftTracker(store)
    swapped = replace(OTHER, gpus=(*GPUS[:3], gpu(3, "S9"), *GPUS[4:]))
    kinds = [e.kind for e in restarted.apply(FleetSnapshot(T0 + 600, (NODE, swapped))).new_events]
    assert kinds == ["gpu_swap"]
