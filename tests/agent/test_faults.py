"""Every fault the agent can see on a simulated node, as a controller receives it."""

from __future__ import annotations

from collectors.agent.fields import NVLINK_FIELDS


def fault(kind: str, at: str, **params: object) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', 'node = "node-001"', f'at = "{at}"']
    lines += [f"{k} = {v!r}".replace("'", '"') for k, v in params.items()]
    return "\n".join(lines) + "\n"


def test_xid79_gives_an_xid_event_and_a_lost_gpu_while_the_others_stream(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("xid79", "3s", gpu=5), samples=8)
    xids = [e for e in run.events if e.kind == "xid"]
    assert [(e.gpu, e.code) for e in xids] == [(5, 79)]
    assert xids[0].uuid == run.hello.gpus[5].uuid
    lost_events = [e for e in run.events if e.kind == "gpu_lost"]
    assert [(e.gpu, e.detail) for e in lost_events] == [(5, "NVMLError_GpuIsLost")]
    before, after = run.samples[:3], run.samples[3:]
    assert all(not s.lost and s.gpus[5] is not None for s in before)
    for sample in after:
        assert sample.lost == (5,) and sample.gpus[5] is None
        others = [row for i, row in enumerate(sample.gpus) if i != 5]
        assert all(row is not None and row[0] is not None for row in others)
    # Slow ticks (0 and 5) leave the lost GPU's slow entry null too.
    assert run.samples[5].slow is not None and run.samples[5].slow[5] is None


def test_ecc_dbe_raises_uncorrected_volatile_ecc_and_sends_xid_48(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("ecc_dbe", "2s", gpu=2, xid=48), samples=6)
    first, later = run.samples[0], run.samples[5]
    assert run.slow(first, 2, "ecc_unc_vol") == 0
    assert run.slow(later, 2, "ecc_unc_vol") > 0
    assert run.slow(later, 2, "remap_pending") == 1
    assert run.slow(later, 1, "ecc_unc_vol") == 0
    kinds = {(e.kind, e.gpu, e.code) for e in run.events}
    assert ("xid", 2, 48) in kinds and ("dbe", 2, None) in kinds


def test_ib_link_down_shows_port_down_and_link_downed_plus_one(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("ib_link_down", "2s", port=3), samples=5)
    first, later = run.samples[0], run.samples[4]
    assert run.port(first, 3, "state") == 4 and run.port(later, 3, "state") == 1
    assert run.port(later, 3, "phys_state") != 5
    assert run.port(later, 3, "link_downed") == run.port(first, 3, "link_downed") + 1
    assert run.port(later, 2, "state") == 4


def test_gpu_missing_leaves_seven_gpus_in_hello(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("gpu_missing", "0s", gpu=3), samples=2)
    assert len(run.hello.gpus) == 7
    assert all(len(s.gpus) == 7 and not s.lost for s in run.samples)


def test_thermal_slowdown_sets_the_hw_thermal_clock_reason(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("thermal_slowdown", "2s", gpu=1), samples=5)
    assert not run.gpu(run.samples[0], 1, "clock_reasons") & 0x40  # type: ignore[operator]
    assert run.gpu(run.samples[4], 1, "clock_reasons") & 0x40  # type: ignore[operator]
    assert not run.gpu(run.samples[4], 0, "clock_reasons") & 0x40  # type: ignore[operator]


def test_nvlink_crc_storm_makes_crc_flit_rise_on_its_link(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("nvlink_crc_storm", "1s", gpu=4, link=2), samples=11, slow_interval=5.0)
    slow = [s for s in run.samples if s.slow is not None]
    totals = [run.slow(s, 4, "nvlink_crc_flit") for s in slow]
    assert totals[0] == 0 and totals[0] < totals[1] < totals[2]  # type: ignore[operator]
    flit = NVLINK_FIELDS.index("crc_flit")
    links = slow[-1].links
    assert links is not None and links[4] is not None
    assert links[4][2][flit] == totals[2] and links[4][1][flit] == 0
    assert run.slow(slow[-1], 0, "nvlink_crc_flit") == 0


def test_nvlink_down_drops_the_active_link_count_and_sends_xid_74(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("nvlink_down", "1s", gpu=0, link=5), samples=6, slow_interval=5.0)
    total = run.hello.gpus[0].nvlinks
    assert run.slow(run.samples[0], 0, "nvlink_active") == total
    assert run.slow(run.samples[5], 0, "nvlink_active") == total - 1
    assert ("xid", 0, 74) in {(e.kind, e.gpu, e.code) for e in run.events}


def test_row_remap_failure_is_reported_in_slow_fields(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("row_remap_failure", "1s", gpu=6), samples=6, slow_interval=5.0)
    assert run.slow(run.samples[0], 6, "remap_failure") == 0
    assert run.slow(run.samples[5], 6, "remap_failure") == 1
    assert run.slow(run.samples[5], 6, "recovery_action") >= 1  # type: ignore[operator]
    assert ("xid", 6, 64) in {(e.kind, e.gpu, e.code) for e in run.events}


def test_ib_symbol_errors_rise_on_their_port(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("ib_symbol_errors", "1s", port=6, rate=50), samples=5)
    first, later = run.samples[0], run.samples[4]
    grown = run.port(later, 6, "symbol_error") - run.port(first, 6, "symbol_error")  # type: ignore[operator]
    assert grown >= 100
    assert run.port(later, 5, "symbol_error") == run.port(first, 5, "symbol_error")


def test_ib_degraded_rate_lowers_the_port_rate(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("ib_degraded_rate", "2s", port=0), samples=4)
    assert run.port(run.samples[0], 0, "rate_gbps") == 400.0
    assert run.port(run.samples[3], 0, "rate_gbps") == 200.0
    assert run.port(run.samples[3], 0, "state") == 4


def test_row_remap_pending_sets_the_flag_and_sends_xid_63(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(fault("row_remap_pending", "1s", gpu=7), samples=6, slow_interval=5.0)
    assert run.slow(run.samples[0], 7, "remap_pending") == 0
    assert run.slow(run.samples[5], 7, "remap_pending") == 1
    assert ("xid", 7, 63) in {(e.kind, e.gpu, e.code) for e in run.events}


def test_a_recovered_gpu_leaves_lost_on_the_next_slow_tick(agent_run) -> None:  # type: ignore[no-untyped-def]
    scenario = fault("xid79", "2s", gpu=5) + fault("recover", "5s")
    run = agent_run(scenario, samples=9, slow_interval=3.0)
    lost = [s.lost for s in run.samples]
    # Lost from 2 s; the recovery at 5 s is noticed at the slow tick of 6 s.
    assert lost == [(), (), (5,), (5,), (5,), (5,), (), (), ()]
    assert run.gpu(run.samples[6], 5, "util_gpu") is not None
    assert [e.gpu for e in run.events if e.kind == "gpu_lost"] == [5]


def test_a_gpu_lost_before_start_is_listed_and_fully_read_once_it_answers(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(
        fault("xid79", "0s", gpu=5) + fault("recover", "2s"), samples=5, slow_interval=3.0
    )
    assert [g.index for g in run.hello.gpus] == list(range(8))
    assert [s.lost for s in run.samples] == [(5,), (5,), (5,), (), ()]
    back = run.samples[3]
    assert all(value is not None for value in back.gpus[5])  # type: ignore[union-attr]
    assert back.slow is not None and back.slow[5] is not None and not back.errs
    # Lost before hello: NVML could say nothing about it then.
    assert run.hello.gpus[5].uuid == "" and run.hello.gpus[4].uuid.startswith("GPU-")
