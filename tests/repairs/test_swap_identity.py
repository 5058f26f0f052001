"""Slot identities: a swap seen across a controller restart, a replaced node as one event."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from fleet.drift import STORE_NAME, DriftTracker
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot

T0 = datetime(2026, 11, 2, tzinfo=UTC).timestamp()


def _gpu(i: int, serial: str) -> GpuSnapshot:
    return GpuSnapshot(i, f"GPU-{serial}", "H100", serial=serial, verdict="ok")


def _fleet(t: float, serials: list[str]) -> FleetSnapshot:
    gpus = tuple(_gpu(i, s) for i, s in enumerate(serials))
    return FleetSnapshot(t, (NodeSnapshot("gpu-001", "streaming", state="up", gpus=gpus),))


def _kinds(snapshot: FleetSnapshot) -> list[tuple[str, int | None, str]]:
    return [(e.kind, e.gpu, e.detail) for e in snapshot.new_events]


def test_a_swap_while_the_controller_was_down_is_still_a_swap(tmp_path: Path) -> None:
    store = tmp_path / STORE_NAME
    DriftTracker(store).apply(_fleet(T0, ["S0", "S1", "S2", "S3"]))
    # The controller restarts; meanwhile the provider swapped GPU 2.
    after = DriftTracker(store).apply(_fleet(T0 + 600, ["S0", "S1", "S9", "S3"]))
    assert _kinds(after) == [("gpu_swap", 2, "GPU 2: serial S2 -> S9")]


def test_every_serial_changed_is_a_replaced_node(tmp_path: Path) -> None:
    tracker = DriftTracker(tmp_path / STORE_NAME)
    tracker.apply(_fleet(T0, ["S0", "S1", "S2"]))
    events = tracker.apply(_fleet(T0 + 60, ["N0", "N1", "N2"])).new_events
    assert [e.kind for e in events] == ["node_replaced", "gpu_swap", "gpu_swap", "gpu_swap"]
    assert events[0].detail == "every GPU serial changed (3 of 3)"


def test_one_swap_in_a_running_session_is_not_a_replaced_node() -> None:
    tracker = DriftTracker()
    tracker.apply(_fleet(T0, ["S0", "S1", "S2"]))
    snap = _fleet(T0 + 60, ["S0", "S7", "S2"])
    assert _kinds(tracker.apply(snap)) == [("gpu_swap", 1, "GPU 1: serial S1 -> S7")]
    # Nothing changed after that: no second event.
    later = replace(snap, taken_at=T0 + 120)
    assert tracker.apply(later).new_events == ()
