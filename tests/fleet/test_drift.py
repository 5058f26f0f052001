"""Inventory drift: expected inventory from the first healthy snapshot, drift as node state."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from fleet.drift import STORE_NAME, DriftTracker, Inventory, drift_reasons
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, NodeTransition, PortSnapshot
from history import HistoryRecorder
from history.section import HistorySection

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()


def gpu(i: int, serial: str | None = None, links: int = 18, verdict: str = "ok") -> GpuSnapshot:
    return GpuSnapshot(
        i,
        f"GPU-{serial or i}",
        "H100",
        serial=serial or f"S{i}",
        nvlink_active=links,
        nvlink_total=18,
        verdict=verdict,  # type: ignore[arg-type]
    )


GPUS = tuple(gpu(i) for i in range(8))
PORTS = tuple(PortSnapshot(f"mlx5_{i}/1", "ib", "ACTIVE", verdict="ok") for i in range(4))
NODE = NodeSnapshot("gpu-001", "streaming", state="up", gpus=GPUS, ports=PORTS, state_since=T0)


def fleet(t: float, node: NodeSnapshot = NODE, first: bool = False) -> FleetSnapshot:
    transitions = (NodeTransition(node.name, node.state, t),) if first else ()
    return FleetSnapshot(t, (node,), transitions=transitions)


def test_no_drift_against_itself() -> None:
    assert drift_reasons(Inventory.of(NODE), NODE) == ()


def test_missing_hca_and_changed_nvlink_mask_are_reasons() -> None:
    gpus = (*GPUS[:2], replace(GPUS[2], nvlink_active=16), *GPUS[3:])
    later = replace(NODE, ports=PORTS[:3], gpus=gpus)
    assert drift_reasons(Inventory.of(NODE), later) == (
        "mlx5_3 missing",
        "NVLink mask changed: GPU 2 16 active (was 18)",
    )


def test_fewer_gpus_than_at_first_connection_when_the_config_expects_fewer() -> None:
    expected = Inventory.of(NODE)
    seven = replace(NODE, gpus=GPUS[:7], expected_gpus=4)
    assert drift_reasons(expected, seven) == ("7 of 8 GPUs present at first connection",)
    # With 8 configured the node rule already says "7 of 8 GPUs visible": no duplicate.
    assert drift_reasons(expected, replace(seven, expected_gpus=8)) == ()


def test_drift_breaks_an_up_node_from_start_to_end() -> None:
    tracker = DriftTracker()
    tracker.apply(fleet(T0, first=True))  # the first healthy snapshot is the baseline
    gone = replace(NODE, ports=PORTS[:3])
    broken = tracker.apply(fleet(T0 + 10, gone))
    node = broken.nodes[0]
    assert (node.state, node.broken_reasons, node.state_since) == (
        "broken",
        ("mlx5_3 missing",),
        T0 + 10,
    )
    assert broken.transitions == (
        NodeTransition("gpu-001", "broken", T0 + 10, ("mlx5_3 missing",)),
    )
    still = tracker.apply(fleet(T0 + 20, gone))
    assert still.transitions == () and still.nodes[0].state_since == T0 + 10
    back = tracker.apply(fleet(T0 + 30))
    assert back.transitions == (NodeTransition("gpu-001", "up", T0 + 30),)
    assert back.nodes[0].state == "up"


def test_a_swap_is_an_event_and_a_returning_bad_serial_is_a_repeat_offender(
    tmp_path: Path,
) -> None:
    store = tmp_path / STORE_NAME
    tracker = DriftTracker(store)
    tracker.apply(fleet(T0))
    failed = replace(NODE, gpus=(gpu(0, "BAD", verdict="fail"), *GPUS[1:]))
    tracker.apply(fleet(T0 + 1, failed))  # first failure of serial BAD
    swapped = replace(NODE, gpus=(gpu(0, "NEW"), *GPUS[1:]))
    events = tracker.apply(fleet(T0 + 2, swapped)).new_events
    assert [(e.kind, e.gpu, e.detail) for e in events] == [
        ("gpu_swap", 0, "GPU 0: serial BAD -> NEW")
    ]
    # A controller restart: the provider hands the known-bad board back, and it fails.
    again = DriftTracker(store)
    again.apply(fleet(T0 + 100, swapped))
    back = replace(NODE, gpus=(gpu(0, "BAD", verdict="fail"), *GPUS[1:]))
    kinds = [(e.kind, e.code) for e in again.apply(fleet(T0 + 101, back)).new_events]
    assert kinds == [("gpu_swap", None), ("repeat_offender", 2)]
    assert again.offenders() == {"BAD": 2}
    flagged = again.apply(fleet(T0 + 102, back)).nodes[0].gpus[0]
    assert flagged.reasons == ("repeat offender: serial BAD, failure 2",)
    # Still failing when the controller restarts: still flagged, not counted again.
    third = DriftTracker(store)
    shown = third.apply(fleet(T0 + 200, back))
    assert shown.new_events == () and shown.nodes[0].gpus[0].reasons == flagged.reasons


def test_a_failure_across_a_restart_is_one_failure(tmp_path: Path) -> None:
    store = tmp_path / STORE_NAME
    failed = replace(NODE, gpus=(gpu(0, "X", verdict="fail"), *GPUS[1:]))
    DriftTracker(store).apply(fleet(T0, failed))
    events = DriftTracker(store).apply(fleet(T0 + 60, failed)).new_events
    assert [e.kind for e in events] == []


def test_unknown_verdicts_do_not_end_a_failure() -> None:
    tracker = DriftTracker()
    fails = replace(NODE, gpus=(gpu(0, "Y", verdict="fail"), *GPUS[1:]))
    tracker.apply(fleet(T0, fails))
    tracker.apply(fleet(T0 + 1, replace(NODE, gpus=(gpu(0, "Y", verdict="unknown"), *GPUS[1:]))))
    assert tracker.apply(fleet(T0 + 2, fails)).new_events == ()


def test_drift_interval_lands_in_node_states(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0)
    tracker = DriftTracker()
    recorder.record(tracker.apply(fleet(T0, first=True)))
    gone = replace(NODE, ports=PORTS[:3])
    for t in (T0 + 10, T0 + 20):
        recorder.record(tracker.apply(fleet(t, gone)))
    recorder.record(tracker.apply(fleet(T0 + 30)))
    recorder.close()
    rows = pl.read_parquet(tmp_path / "node_states" / "**" / "*.parquet").sort("start")
    states = [(r["state"], r["reasons"]) for r in rows.iter_rows(named=True)]
    assert states == [("up", []), ("broken", ["mlx5_3 missing"]), ("up", [])]
    starts = [t.timestamp() for t in rows["start"].to_list()]
    assert starts == [T0, T0 + 10, T0 + 30]


def test_healthy_gpus_leave_no_record_and_each_node_has_its_own_gpu_indexes() -> None:
    tracker = DriftTracker()
    other = replace(NODE, name="gpu-002")
    tracker.apply(FleetSnapshot(T0, (NODE, other)))
    assert tracker.serials == {}
    swapped = replace(other, gpus=(gpu(0, "NEW"), *GPUS[1:]))
    events = tracker.apply(FleetSnapshot(T0 + 1, (NODE, swapped))).new_events
    assert [(e.node, e.kind, e.detail) for e in events] == [
        ("gpu-002", "gpu_swap", "GPU 0: serial S0 -> NEW")
    ]
    failed = replace(NODE, gpus=(gpu(0, "S0", verdict="fail"), *GPUS[1:]))
    tracker.apply(FleetSnapshot(T0 + 2, (failed, swapped)))
    assert {s: (r.failures, r.failing) for s, r in tracker.serials.items()} == {"S0": (1, True)}
