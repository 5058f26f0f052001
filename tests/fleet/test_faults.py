"""Every simulator fault kind, fed as protocol messages, gives the documented verdicts."""

from __future__ import annotations

from fleet.model import GpuSnapshot, NodeSnapshot, PortSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start


def node_of(state: FleetState, feed: NodeFeed) -> NodeSnapshot:
    node = state.snapshot(feed.t).node(feed.name)
    assert node is not None
    return node


def gpu_of(state: FleetState, feed: NodeFeed, index: int) -> GpuSnapshot:
    return node_of(state, feed).gpus[index]


def port_of(state: FleetState, feed: NodeFeed, index: int) -> PortSnapshot:
    return node_of(state, feed).ports[index]


def test_healthy_node_is_up(state: FleetState, feed: NodeFeed) -> None:
    node = node_of(state, feed)
    assert (node.state, node.broken_reasons, node.healthy_gpus) == ("up", (), 8)
    assert {g.verdict for g in node.gpus} == {"ok"}


def test_xid79_lost_gpu_breaks_the_node(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=5, code=79))
    feed.lost.add(5)
    state.ingest(feed.sample())
    node = node_of(state, feed)
    gpu = node.gpus[5]
    assert gpu.verdict == "lost" and gpu.lost
    assert "XID 79: GPU has fallen off the bus" in gpu.reasons
    assert node.state == "broken"
    assert "7 of 8 GPUs healthy" in node.broken_reasons
    assert node.gpus[4].verdict == "ok"  # the other GPUs keep streaming


def test_ecc_dbe_fails_on_volatile_uncorrected(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("dbe", gpu=2))
    state.ingest(feed.event("xid", gpu=2, code=48))
    feed.slow[2].update(ecc_unc_vol=2, ecc_unc_agg=2, remap_pending=1, recovery_action=1)
    state.ingest(feed.sample())
    gpu = gpu_of(state, feed, 2)
    assert gpu.verdict == "fail"
    assert "uncorrected ECC (volatile) = 2" in gpu.reasons
    assert "XID 48: double-bit ECC error" in gpu.reasons
    assert "row remap pending" in gpu.reasons


def test_row_remap_pending_warns_and_keeps_node_up(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=1, code=63))
    feed.slow[1]["remap_pending"] = 1
    state.ingest(feed.sample())
    node = node_of(state, feed)
    assert (node.gpus[1].verdict, node.gpus[1].reasons) == ("warn", ("row remap pending",))
    assert node.state == "up"


def test_row_remap_failure_fails(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=0, code=64))
    feed.slow[0].update(remap_failure=1, recovery_action=1)
    state.ingest(feed.sample())
    gpu = gpu_of(state, feed, 0)
    assert gpu.verdict == "fail" and "row remap failure" in gpu.reasons


def test_nvlink_crc_storm_fails_at_100_per_second(state: FleetState, feed: NodeFeed) -> None:
    feed.add_link_crc(gpu=2, link=3, errors=1530)
    state.ingest(feed.sample(advance=10.0))
    gpu = gpu_of(state, feed, 2)
    assert gpu.verdict == "fail"
    assert "NVLink CRC 153/s on 1 link" in gpu.reasons
    assert gpu.nvlink_crc_rate == 153.0


def test_nvlink_crc_trickle_warns(state: FleetState, feed: NodeFeed) -> None:
    feed.add_link_crc(gpu=2, link=0, errors=20)
    state.ingest(feed.sample(advance=10.0))
    assert gpu_of(state, feed, 2).reasons == ("NVLink CRC 2/s on 1 link",)


def test_nvlink_down_fails(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=6, code=74))
    feed.slow[6].update(nvlink_active=3, nvlink_recovery=1)
    state.ingest(feed.sample())
    gpu = gpu_of(state, feed, 6)
    assert gpu.verdict == "fail"
    assert "NVLink 1 of 4 links down" in gpu.reasons
    assert "NVLink recovery +1" in gpu.reasons
    assert gpu.nvlink_recovery_delta == 1


def test_ib_link_down_fails_port_and_breaks_node(state: FleetState, feed: NodeFeed) -> None:
    feed.ports[1].update(state=1, phys_state=2, link_downed=1, link_error_recovery=1)
    state.ingest(feed.sample())
    node = node_of(state, feed)
    port = node.ports[1]
    assert port.verdict == "fail"
    assert port.reasons == (
        "mlx5_1/1 state DOWN",
        "mlx5_1/1 phys_state Polling",
        "mlx5_1/1 link_downed +1",
    )
    assert port.link_downed_delta == 1
    assert node.state == "broken" and "mlx5_1/1 state DOWN" in node.broken_reasons


def test_link_downed_holds_after_the_link_comes_back(feed: NodeFeed, health: HealthSection) -> None:
    state = FleetState([NodeSpec(feed.name)], health)
    start(state, feed)
    feed.ports[0].update(state=1, phys_state=2, link_downed=1)
    state.ingest(feed.sample())
    feed.ports[0].update(state=4, phys_state=5)
    state.ingest(feed.sample())
    assert port_of(state, feed, 0).reasons == ("mlx5_0/1 link_downed +1",)
    clears_at = feed.t - 1 + health.port_fatal_hold_s
    state.ingest(feed.sample(advance=clears_at - feed.t))
    assert port_of(state, feed, 0).verdict == "ok"


def test_ib_symbol_errors_warn_then_fail_above_10_per_second(
    state: FleetState, feed: NodeFeed
) -> None:
    feed.ports[0]["symbol_error"] = 3
    state.ingest(feed.sample())
    assert port_of(state, feed, 0).verdict == "warn"
    feed.ports[0]["symbol_error"] += 15
    state.ingest(feed.sample())
    port = port_of(state, feed, 0)
    assert (port.verdict, port.symbol_error_rate) == ("fail", 15.0)
    assert node_of(state, feed).state == "broken"


def test_ib_degraded_rate_warns_against_the_nodes_best(state: FleetState, feed: NodeFeed) -> None:
    feed.ports[1]["rate_gbps"] = 200.0
    state.ingest(feed.sample())
    node = node_of(state, feed)
    assert node.ports[1].reasons == ("mlx5_1/1 rate 200 Gb/s < expected 400",)
    assert node.ports[1].verdict == "warn" and node.state == "up"


def test_configured_expected_rate_wins(feed: NodeFeed) -> None:
    state = FleetState([NodeSpec(feed.name)], HealthSection(expected_port_rate_gbps=800.0))
    start(state, feed)
    assert port_of(state, feed, 0).reasons == ("mlx5_0/1 rate 400 Gb/s < expected 800",)


def test_thermal_slowdown_warns(state: FleetState, feed: NodeFeed) -> None:
    feed.fast[1].update(clock_reasons=0x40, temp_c=93)
    state.ingest(feed.sample(slow=False))
    node = node_of(state, feed)
    assert (node.gpus[1].verdict, node.gpus[1].reasons) == ("warn", ("HW thermal slowdown",))
    assert node.state == "up"


def test_gpu_missing_breaks_the_node(feed: NodeFeed, health: HealthSection) -> None:
    state = FleetState([NodeSpec(feed.name)], health)
    feed.uuids.pop()
    feed.fast.pop()
    feed.slow.pop()
    feed.links.pop()
    start(state, feed)
    node = node_of(state, feed)
    assert node.state == "broken"
    assert node.broken_reasons[:2] == ("7 of 8 GPUs healthy", "7 of 8 GPUs visible")


def test_recover_clears_xid79(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=5, code=79))
    feed.lost.add(5)
    state.ingest(feed.sample())
    assert node_of(state, feed).state == "broken"
    feed.lost.clear()  # rebooted: the GPU answers again
    state.ingest(feed.sample())
    node = node_of(state, feed)
    assert (node.gpus[5].verdict, node.state) == ("ok", "up")


def test_recover_clears_ecc_dbe(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=2, code=48))
    feed.slow[2].update(ecc_unc_vol=2, remap_pending=1, recovery_action=1)
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 2).verdict == "fail"
    feed.slow[2].update(ecc_unc_vol=0, remap_pending=0, recovery_action=0, remap_unc=2)
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 2).verdict == "ok"


def test_hardware_xid_without_reset_evidence_holds(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=3, code=95))
    for _ in range(5):
        state.ingest(feed.sample(advance=3_600.0))
    assert gpu_of(state, feed, 3).reasons == ("XID 95: uncontained ECC error",)


def test_new_session_clears_hardware_xid(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=3, code=62))
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 3).verdict == "fail"
    state.ingest(feed.hello())  # the reboot restarted the agent
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 3).verdict == "ok"


def test_new_uuid_starts_clean(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=4, code=13))
    feed.slow[4]["ecc_unc_vol"] = 1
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 4).verdict == "fail"
    feed.uuids[4] = "GPU-swapped-board"
    feed.slow[4]["ecc_unc_vol"] = 0
    state.ingest(feed.hello())
    state.ingest(feed.sample())
    gpu = gpu_of(state, feed, 4)
    # The application XID would still hold on the old board; the new one has no history.
    assert (gpu.uuid, gpu.verdict, gpu.reasons) == ("GPU-swapped-board", "ok", ())


def test_application_xid_warns_then_expires(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=0, code=13))
    state.ingest(feed.sample())
    assert gpu_of(state, feed, 0).verdict == "warn"
    later = feed.t + HealthSection().xid_app_hold_s
    assert state.snapshot(later).nodes[0].gpus[0].verdict == "ok"


def test_agent_error_status_is_unreachable(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.status("agent-error", "agent exited with 1"))
    node = node_of(state, feed)
    assert node.state == "unreachable"
    assert node.broken_reasons == ("agent-error: agent exited with 1",)


def test_node_unreachable_status(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.status("unreachable", "connect timeout"))
    assert node_of(state, feed).state == "unreachable"


def test_silent_node_turns_stale_then_unreachable(
    state: FleetState, feed: NodeFeed, health: HealthSection
) -> None:
    last = feed.t
    stale = state.snapshot(last + 3.5).node(feed.name)
    assert stale is not None and (stale.status, stale.state) == ("stale", "up")
    gone = state.snapshot(last + health.stale_unreachable_s).node(feed.name)
    assert gone is not None and gone.state == "unreachable"
    assert gone.broken_reasons == (f"no sample for {health.stale_unreachable_s:.0f} s",)


def test_never_connected_node_is_unreachable(state: FleetState, feed: NodeFeed) -> None:
    other = state.snapshot(feed.t).node("gpu-002")
    assert other is not None
    assert (other.state, other.status, other.broken_reasons) == (
        "unreachable",
        "connecting",
        ("connecting: no sample yet",),
    )


def test_pegged_symbol_error_reads_as_unknown_rate(state: FleetState, feed: NodeFeed) -> None:
    feed.ports[0]["symbol_error"] = 65_000
    state.ingest(feed.sample())
    feed.ports[0]["symbol_error"] = 65_535  # clamped at 16 bits
    state.ingest(feed.sample())
    port = port_of(state, feed, 0)
    assert port.symbol_error_rate is None  # not 535/s
    assert "mlx5_0/1 symbol_error pegged at its maximum (rate unknown)" in port.reasons


def test_counter_reset_gives_no_negative_rate(state: FleetState, feed: NodeFeed) -> None:
    feed.ports[0]["port_xmit_data"] = 1_000_000
    state.ingest(feed.sample())
    feed.ports[0]["port_xmit_data"] = 2_000_000
    state.ingest(feed.sample())
    assert port_of(state, feed, 0).tx_bytes_per_s == 4_000_000.0  # data counter x 4
    feed.ports[0]["port_xmit_data"] = 10  # PerfMgt cleared it
    state.ingest(feed.sample())
    port = port_of(state, feed, 0)
    assert port.tx_bytes_per_s is None and port.verdict == "ok"


def test_nvlink_counter_reset_after_reboot_is_not_an_error_storm(
    state: FleetState, feed: NodeFeed
) -> None:
    feed.add_link_crc(gpu=0, link=0, errors=50_000)
    state.ingest(feed.sample(advance=1_000.0))
    feed.links[0][0][3] = 0  # driver reload zeroed the counters
    feed.slow[0]["nvlink_crc_flit"] = 0
    state.ingest(feed.sample())
    gpu = gpu_of(state, feed, 0)
    assert gpu.nvlink_crc_rate is None and gpu.verdict == "ok"
