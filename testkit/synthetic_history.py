"""Deterministic fleet snapshots without a fleet, for tests and benchmarks of history.

Values follow a formula of (node, GPU, time) so a test can recompute any aggregate
from the same formula and compare it with what the history wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

from fleet.model import (
    EventRecord,
    FleetSnapshot,
    GpuSnapshot,
    NodeSnapshot,
    NodeState,
    NodeTransition,
    Verdict,
)
from history.events import to_frame as events_frame
from history.layout import EVENTS, NODE_STATES, day_of_ms, partition_dir, write_atomic
from history.states import StateInterval
from history.states import to_frame as states_frame

GIB = 1 << 30


def sample_util(node: int, gpu: int, t: float) -> int:
    """GPU utilization (percent) of GPU ``gpu`` of node number ``node`` at ``t``."""
    return (node * 7 + gpu * 13 + int(t)) % 101


def sample_power(node: int, gpu: int, t: float) -> float:
    """Power draw (W) of a GPU at ``t`` (exact in float32: a multiple of 1/4)."""
    return 100.0 + ((node + gpu + int(t)) % 40) * 0.25


def sample_temp(node: int, gpu: int, t: float) -> int:
    """Temperature (C) of a GPU at ``t``."""
    return 40 + (node + 3 * gpu + int(t) // 7) % 40


def sample_mem(node: int, gpu: int, t: float) -> int:
    """Memory used (bytes, whole MiB) of a GPU at ``t``."""
    return (1 + (node + gpu + int(t)) % 64) * GIB


def node_name(node: int) -> str:
    """The name of node number ``node``."""
    return f"gpu-{node:04d}"


def gpus_of(node: int, t: float, count: int, verdict: Verdict = "ok") -> tuple[GpuSnapshot, ...]:
    """``count`` GPUs of node number ``node`` at ``t`` with formula values."""
    return tuple(
        GpuSnapshot(
            index=g,
            uuid=f"GPU-{node:04d}-{g}",
            name="NVIDIA H100 80GB HBM3",
            util_gpu=float(sample_util(node, g, t)),
            sm_active=sample_util(node, g, t) / 2,
            mem_used_bytes=sample_mem(node, g, t),
            power_w=sample_power(node, g, t),
            temp_c=float(sample_temp(node, g, t)),
            verdict=verdict,
        )
        for g in range(count)
    )


def snapshot(
    t: float,
    nodes: int,
    gpus: int = 8,
    *,
    states: Callable[[int], NodeState] | None = None,
    transitions: Sequence[NodeTransition] = (),
    events: Sequence[EventRecord] = (),
) -> FleetSnapshot:
    """A fleet of ``nodes`` nodes with ``gpus`` GPUs each at ``t``; all up unless ``states``."""
    node_snaps = []
    for n in range(nodes):
        state = states(n) if states is not None else "up"
        verdict: Verdict = "ok" if state == "up" else "fail"
        node_snaps.append(
            NodeSnapshot(
                name=node_name(n),
                status="streaming",
                state=state,
                broken_reasons=() if state == "up" else (f"{state} (synthetic)",),
                gpus=gpus_of(n, t, gpus, verdict),
                sampled_at=t,  # a streaming node has been sampled; its state says the rest
            )
        )
    return FleetSnapshot(
        taken_at=t,
        nodes=tuple(node_snaps),
        transitions=tuple(transitions),
        new_events=tuple(events),
    )


def write_state_intervals(data_dir: Path, intervals: Sequence[StateInterval]) -> None:
    """``intervals`` as ``node_states`` rows in the documented layout (day of each start)."""
    by_day: dict[date, list[StateInterval]] = {}
    for interval in intervals:
        by_day.setdefault(day_of_ms(interval.start_ms), []).append(interval)
    for day, rows in by_day.items():
        path = partition_dir(data_dir, NODE_STATES, day) / "synthetic.parquet"
        write_atomic(path, states_frame(rows))


def write_events(data_dir: Path, events: Sequence[EventRecord]) -> None:
    """``events`` as ``events`` rows in the documented layout (one file per UTC day)."""
    by_day: dict[date, list[EventRecord]] = {}
    for event in events:
        by_day.setdefault(day_of_ms(round(event.t * 1000)), []).append(event)
    for day, rows in by_day.items():
        write_atomic(partition_dir(data_dir, EVENTS, day) / "synthetic.parquet", events_frame(rows))
