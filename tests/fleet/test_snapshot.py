"""Snapshots: reuse of unchanged objects, transitions and events reported exactly once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start


def two_nodes() -> tuple[FleetState, NodeFeed, NodeFeed]:
    a, b = NodeFeed("gpu-001"), NodeFeed("gpu-002")
    state = FleetState([NodeSpec(a.name), NodeSpec(b.name)], HealthSection())
    start(state, a)
    start(state, b)
    return state, a, b


def test_unchanged_nodes_reuse_their_snapshot_objects() -> None:
    state, a, _b = two_nodes()
    first = state.snapshot(a.t)
    state.ingest(a.sample())
    second = state.snapshot(a.t)
    assert second.nodes[1] is first.nodes[1]  # gpu-002 sent nothing
    assert second.nodes[0] is not first.nodes[0]
    third = state.snapshot(a.t + 0.5)
    assert third.nodes is second.nodes  # nothing changed at all


def test_first_snapshot_reports_every_nodes_initial_state_once() -> None:
    state, a, _ = two_nodes()
    first = state.snapshot(a.t)
    assert [(t.node, t.state) for t in first.transitions] == [("gpu-001", "up"), ("gpu-002", "up")]
    assert state.snapshot(a.t).transitions == ()


def test_a_transition_carries_its_evidence_and_appears_once() -> None:
    state, a, _ = two_nodes()
    state.snapshot(a.t)
    state.ingest(a.event("xid", gpu=1, code=79))
    a.lost.add(1)
    state.ingest(a.sample())
    broken = state.snapshot(a.t)
    assert len(broken.transitions) == 1
    transition = broken.transitions[0]
    assert (transition.node, transition.state, transition.at) == ("gpu-001", "broken", a.t)
    # The cause first, then what the XID means, the count last.
    assert transition.reasons == (
        "GPU 1 lost (XID 79): GPU has fallen off the bus",
        "7 of 8 GPUs healthy",
    )
    state.ingest(a.sample())
    again = state.snapshot(a.t)
    assert again.transitions == ()
    node = again.node("gpu-001")
    assert node is not None and node.state_since == transition.at


def test_new_events_appear_exactly_once_and_stay_in_node_history() -> None:
    state, a, _ = two_nodes()
    state.ingest(a.event("xid", gpu=2, code=31))
    state.ingest(a.error("NVMLError_Unknown", "temperature read failed"))
    snap = state.snapshot(a.t)
    assert [(e.kind, e.code, e.detail) for e in snap.new_events] == [
        ("xid", 31, "XID 31: GPU memory page fault"),
        ("agent_error", None, "NVMLError_Unknown: temperature read failed"),
    ]
    assert snap.new_events[0].uuid == "GPU-gpu-001-2"
    assert state.snapshot(a.t).new_events == ()
    node = state.snapshot(a.t).node("gpu-001")
    assert node is not None and len(node.events) == 2


def test_event_history_is_bounded() -> None:
    feed = NodeFeed()
    state = FleetState([NodeSpec(feed.name)], HealthSection(), event_history=3)
    start(state, feed)
    for code in (13, 31, 43, 45, 68):
        state.ingest(feed.event("xid", gpu=0, code=code))
    node = state.snapshot(feed.t).node(feed.name)
    assert node is not None and [e.code for e in node.events] == [43, 45, 68]


def test_unchanged_gpus_keep_their_objects_while_a_hold_is_running() -> None:
    state, a, _ = two_nodes()
    state.ingest(a.event("xid", gpu=0, code=13))
    first = state.snapshot(a.t).nodes[0]
    # No new data, but a hold is pending: the node is not rebuilt before the hold ends.
    assert state.snapshot(a.t + 1.0).nodes[0] is first


def test_unknown_node_is_adopted() -> None:
    state, a, _ = two_nodes()
    stranger = NodeFeed("gpu-999")
    start(state, stranger)
    names = [n.name for n in state.snapshot(a.t).nodes]
    assert names == ["gpu-001", "gpu-002", "gpu-999"]


def test_sample_before_hello_is_ignored_for_that_node_only() -> None:
    state, a, _b = two_nodes()
    fresh = NodeFeed("gpu-003")
    state.ingest(fresh.sample())
    snap = state.snapshot(a.t)
    node = snap.node("gpu-003")
    assert node is not None and node.state == "unreachable"
    assert snap.node("gpu-001") is not None and snap.nodes[0].state == "up"


def test_utilization_now_is_the_mean_over_gpus() -> None:
    state, a, _b = two_nodes()
    for f in a.fast:
        f["util_gpu"] = 100
    state.ingest(a.sample())
    assert state.snapshot(a.t).utilization.now == 75.0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 1_000), st.integers(0, 70_000), st.floats(0.1, 20.0, allow_nan=False)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_published_rates_are_never_negative(steps: list[tuple[int, int, float]]) -> None:
    feed = NodeFeed(gpus=1, ports=1)
    state = FleetState([NodeSpec(feed.name, expected_gpus=1)], HealthSection())
    start(state, feed, samples=1)
    for crc, symbols, advance in steps:
        feed.links[0][0][3] = crc
        feed.slow[0]["nvlink_crc_flit"] = crc
        feed.ports[0]["symbol_error"] = min(symbols, 65_535)
        feed.ports[0]["port_xmit_data"] = symbols * 7
        state.ingest(feed.sample(advance=advance))
        node = state.snapshot(feed.t).nodes[0]
        port, gpu = node.ports[0], node.gpus[0]
        for rate in (port.symbol_error_rate, port.tx_bytes_per_s, gpu.nvlink_crc_rate):
            assert rate is None or rate >= 0
        assert port.link_downed_delta >= 0


def test_a_reconnect_with_a_new_board_shows_no_unknown_gap() -> None:
    feed = NodeFeed()
    state = FleetState([NodeSpec(feed.name)], HealthSection())
    start(state, feed)
    state.snapshot(feed.t)
    feed.uuids[0] = "GPU-new-board"
    state.ingest(feed.hello())
    between = state.snapshot(feed.t)
    assert between.transitions == () and between.nodes[0].gpus[0].uuid == "GPU-gpu-001-0"
    state.ingest(feed.sample())
    after = state.snapshot(feed.t)
    assert after.transitions == ()
    assert (after.nodes[0].gpus[0].uuid, after.nodes[0].gpus[0].verdict) == ("GPU-new-board", "ok")


def test_unreachable_nodes_leave_fleet_utilization() -> None:
    state, a, b = two_nodes()
    for f in a.fast:
        f["util_gpu"] = 100
    state.ingest(a.sample())
    state.ingest(b.status("unreachable", "connect timeout"))
    assert state.snapshot(a.t).utilization.now == 100.0


def test_gpu_snapshot_fields_land_under_their_names() -> None:
    feed = NodeFeed(gpus=1, ports=1)
    feed.fast[0].update(util_gpu=97, util_mem=33, mem_used_mib=2, power_w=411.5, pstate=2)
    feed.fast[0].update(temp_c=71, sm_clock_mhz=1755, clock_reasons=0x4, tensor_active=12.5)
    feed.slow[0].update(ecc_corr_vol=5, ecc_corr_agg=9, remap_corr=3, pcie_replay=4)
    feed.slow[0].update(retired_sbe=1, retired_dbe=2, power_limit_w=650.0)
    state = FleetState([NodeSpec(feed.name, expected_gpus=1)], HealthSection())
    start(state, feed)
    gpu = state.snapshot(feed.t).nodes[0].gpus[0]
    assert (gpu.index, gpu.uuid, gpu.name) == (0, "GPU-gpu-001-0", "NVIDIA H100 80GB HBM3")
    assert (gpu.util_gpu, gpu.util_mem, gpu.sm_active, gpu.tensor_active) == (97, 33, 40.0, 12.5)
    assert (gpu.mem_used_bytes, gpu.power_w, gpu.power_limit_w) == (2 << 20, 411.5, 650.0)
    assert (gpu.temp_c, gpu.sm_clock_mhz, gpu.clock_reasons, gpu.pstate) == (71, 1755, 4, 2)
    assert (gpu.ecc_corr_vol, gpu.ecc_unc_vol, gpu.ecc_corr_agg, gpu.ecc_unc_agg) == (5, 0, 9, 0)
    assert (gpu.retired_sbe, gpu.retired_dbe, gpu.retired_pending) == (1, 2, False)
    assert (gpu.remap_corr, gpu.remap_unc, gpu.remap_pending, gpu.remap_failure) == (
        3,
        0,
        False,
        False,
    )
    assert (gpu.pcie_replay, gpu.recovery_action, gpu.nvlink_active, gpu.nvlink_total) == (
        4,
        0,
        4,
        4,
    )
    assert (gpu.nvlink_crc_rate, gpu.nvlink_replay_delta, gpu.nvlink_recovery_delta) == (0, 0, 0)
    assert (gpu.lost, gpu.field_errors, gpu.verdict, gpu.reasons) == (False, (), "ok", ())
    assert (gpu.since, gpu.probe_verdict) == (feed.t, None)


def test_failed_fields_are_reported_for_their_gpu_until_they_read_again() -> None:
    feed = NodeFeed(gpus=3)
    state = FleetState([NodeSpec(feed.name, expected_gpus=3)], HealthSection())
    start(state, feed)
    feed.errs = {"2": {"temp_c": "NVMLError_Unknown"}}
    feed.fast[2]["temp_c"] = None
    state.ingest(feed.sample())
    gpus = state.snapshot(feed.t).nodes[0].gpus
    assert gpus[2].field_errors == (("temp_c", "NVMLError_Unknown"),)
    assert gpus[2].temp_c is None and gpus[2].verdict == "ok"
    assert gpus[1].field_errors == ()
    feed.errs = {}
    feed.fast[2]["temp_c"] = 60
    state.ingest(feed.sample())
    assert state.snapshot(feed.t).nodes[0].gpus[2].field_errors == ()


ACTIONS = st.sampled_from(["sample", "lose", "answer", "port_down", "port_up", "xid13", "silence"])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(ACTIONS, st.floats(0.5, 40.0, allow_nan=False)), max_size=15))
def test_transitions_are_exactly_the_state_changes(steps: list[tuple[str, float]]) -> None:
    feed = NodeFeed(gpus=2, ports=1)
    state = FleetState([NodeSpec(feed.name, expected_gpus=2)], HealthSection())
    start(state, feed, samples=1)
    now = feed.t
    previous = state.snapshot(now).nodes[0].state
    for action, advance in steps:
        now += advance
        if action == "lose":
            feed.lost.add(1)
        elif action == "answer":
            feed.lost.clear()
        elif action in ("port_down", "port_up"):
            feed.ports[0]["state"] = 1 if action == "port_down" else 4
        elif action == "xid13":
            state.ingest(feed.event("xid", gpu=0, code=13))
        if action != "silence":
            state.ingest(feed.sample(advance=now - feed.t))
        snap = state.snapshot(now)
        current = snap.nodes[0].state
        expected = () if current == previous else ((feed.name, current, now),)
        assert tuple((t.node, t.state, t.at) for t in snap.transitions) == expected
        previous = current


def test_a_slow_row_after_fast_only_ticks_shows_in_the_next_snapshot() -> None:
    feed = NodeFeed(gpus=2, ports=1)
    state = FleetState([NodeSpec(feed.name, expected_gpus=2)], HealthSection())
    start(state, feed)
    for _ in range(3):  # fast-only ticks keep each GPU's slow readings as they were
        state.ingest(feed.sample(slow=False))
        assert state.snapshot(feed.t).nodes[0].gpus[1].ecc_corr_vol == 0
    feed.slow[1].update(ecc_corr_vol=6, power_limit_w=600.0)
    state.ingest(feed.sample(slow=True))
    gpu = state.snapshot(feed.t).nodes[0].gpus[1]
    assert (gpu.ecc_corr_vol, gpu.power_limit_w) == (6, 600.0)
    state.ingest(feed.sample(slow=False))
    assert state.snapshot(feed.t).nodes[0].gpus[1].ecc_corr_vol == 6
