"""Link events: consecutive snapshots in, events table rows out (read back from parquet)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from fleet.link_events import LinkEventDiffer
from fleet.model import EventRecord, FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot
from history import HistoryRecorder
from history.section import HistorySection

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()
UP = PortSnapshot(
    "mlx5_3/1", "ib", "ACTIVE", "LinkUp", 400.0, expected_rate_gbps=400.0, link_downed=0
)
GPU = GpuSnapshot(0, "GPU-a", "H100", nvlink_active=18, nvlink_total=18)


def fleet(
    t: float, port: PortSnapshot = UP, gpu: GpuSnapshot = GPU, events: tuple[EventRecord, ...] = ()
) -> FleetSnapshot:
    node = NodeSnapshot("gpu-001", "streaming", gpus=(gpu,), ports=(port,), events=events)
    return FleetSnapshot(t, (node,))


def kinds(events: tuple[EventRecord, ...]) -> list[tuple[str, int | None, str]]:
    return [(e.kind, e.code, e.detail) for e in events]


def test_the_first_sight_is_a_baseline() -> None:
    down = replace(UP, state="DOWN", phys_state="Polling")
    assert LinkEventDiffer().diff(fleet(T0, down)) == ()


def test_a_port_going_down_and_up_gives_both_events_and_link_downed() -> None:
    differ = LinkEventDiffer()
    differ.diff(fleet(T0))
    down = replace(UP, state="DOWN", phys_state="Polling", link_downed=1)
    assert kinds(differ.diff(fleet(T0 + 1, down))) == [
        ("link_down", None, "mlx5_3/1 state DOWN, phys_state Polling"),
        ("link_downed", 1, "mlx5_3/1 link_downed +1"),
    ]
    assert differ.diff(fleet(T0 + 2, down)) == ()  # no change, no event
    back = replace(UP, link_downed=1)
    assert kinds(differ.diff(fleet(T0 + 3, back))) == [("link_up", None, "mlx5_3/1 up")]
    assert differ.counts["link_down"] == 1 and differ.counts["link_up"] == 1


def test_a_reset_counter_is_no_increment() -> None:
    differ = LinkEventDiffer()
    differ.diff(fleet(T0, replace(UP, link_downed=7)))
    assert differ.diff(fleet(T0 + 1, replace(UP, link_downed=0))) == ()


def test_rate_below_expected_and_back() -> None:
    differ = LinkEventDiffer()
    differ.diff(fleet(T0))
    slow = replace(UP, rate_gbps=200.0)
    assert kinds(differ.diff(fleet(T0 + 1, slow))) == [
        ("link_rate_low", 200, "mlx5_3/1 rate 200 Gb/s < expected 400")
    ]
    assert kinds(differ.diff(fleet(T0 + 2))) == [("link_rate_ok", 400, "mlx5_3/1 rate 400 Gb/s")]


def test_nvlink_down_and_up_name_the_gpu() -> None:
    differ = LinkEventDiffer()
    differ.diff(fleet(T0))
    events = differ.diff(fleet(T0 + 1, gpu=replace(GPU, nvlink_active=16)))
    assert [(e.kind, e.gpu, e.uuid, e.code) for e in events] == [("nvlink_down", 0, "GPU-a", 16)]
    assert events[0].detail == "GPU 0: NVLink 16 of 18 links active (was 18)"
    assert [e.kind for e in differ.diff(fleet(T0 + 2))] == ["nvlink_up"]


def test_a_nic_down_is_a_link_event_too() -> None:
    nic = PortSnapshot("eth0", "eth", "up")
    differ = LinkEventDiffer()
    differ.diff(fleet(T0, nic))
    assert [e.kind for e in differ.diff(fleet(T0 + 1, replace(nic, state="down")))] == ["link_down"]


def test_link_events_reach_the_node_and_stay_until_pushed_out() -> None:
    differ = LinkEventDiffer()
    xid = EventRecord(T0 - 5, "gpu-001", "xid", 0, "GPU-a", 79, "XID 79")
    differ.apply(fleet(T0, events=(xid,)))
    down = replace(UP, state="DOWN")
    first = differ.apply(fleet(T0 + 1, down, events=(xid,)))
    assert [e.kind for e in first.new_events] == ["link_down"]
    assert [e.kind for e in first.nodes[0].events] == ["xid", "link_down"]
    state_node = fleet(T0 + 2, down, events=(xid,)).nodes[0]
    later = differ.apply(FleetSnapshot(T0 + 2, (state_node,)))
    again = differ.apply(FleetSnapshot(T0 + 3, (state_node,)))
    assert later.new_events == () and [e.kind for e in later.nodes[0].events] == [
        "xid",
        "link_down",
    ]
    assert again.nodes[0] is later.nodes[0]  # nothing new: the same object, no rebuild


def test_link_events_land_in_the_events_table(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0)
    differ = LinkEventDiffer()
    down = replace(UP, state="DOWN", phys_state="Polling", link_downed=1)
    for i, port in enumerate((UP, UP, down, down, replace(UP, link_downed=1))):
        recorder.record(differ.apply(fleet(T0 + i, port)))
    recorder.close()
    rows = pl.read_parquet(tmp_path / "events" / "**" / "*.parquet").sort("ts", "kind")
    assert rows.select("node", "kind", "code", "detail").rows() == [
        ("gpu-001", "link_down", None, "mlx5_3/1 state DOWN, phys_state Polling"),
        ("gpu-001", "link_downed", 1, "mlx5_3/1 link_downed +1"),
        ("gpu-001", "link_up", None, "mlx5_3/1 up"),
    ]
    seconds = [t.timestamp() for t in rows["ts"].to_list()]
    assert seconds == [T0 + 2, T0 + 2, T0 + 4]


def test_derived_events_of_other_modules_are_kept_for_the_node_screen() -> None:
    differ = LinkEventDiffer()
    swap = EventRecord(T0 + 1, "gpu-001", "gpu_swap", 0, "GPU-b", None, "GPU 0: serial A -> B")
    shown = differ.apply(replace(fleet(T0 + 1), new_events=(swap,)))
    assert shown.new_events == (swap,)  # recorded once, by whoever derived it
    assert differ.apply(fleet(T0 + 2)).nodes[0].events == (swap,)


def _two_nodes(t: float, port_b: PortSnapshot = UP) -> FleetSnapshot:
    a = NodeSnapshot("gpu-001", "streaming", gpus=(GPU,), ports=(UP,))
    b = NodeSnapshot("gpu-002", "streaming", gpus=(GPU,), ports=(port_b,))
    return FleetSnapshot(t, (a, b))


def test_the_same_port_name_on_two_nodes_is_two_links() -> None:
    differ = LinkEventDiffer()
    differ.diff(_two_nodes(T0))
    down = replace(UP, state="DOWN", phys_state="Polling")
    events = differ.diff(_two_nodes(T0 + 1, down))
    assert [(e.node, e.kind) for e in events] == [("gpu-002", "link_down")]
    assert [(e.node, e.kind) for e in differ.diff(_two_nodes(T0 + 2))] == [("gpu-002", "link_up")]


def test_healthy_ports_of_every_node_share_one_remembered_view() -> None:
    differ = LinkEventDiffer()
    differ.diff(_two_nodes(T0))
    views = differ._ports
    assert views["gpu-001"]["mlx5_3/1"] is views["gpu-002"]["mlx5_3/1"]
