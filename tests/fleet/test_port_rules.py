"""Port rules as pure functions of PortFacts (docs/health.md)."""

from __future__ import annotations

from fleet.health import PortFacts, judge_port
from fleet.settings.health_section import HealthSection

CFG = HealthSection()


def port(**values: object) -> PortFacts:
    f = PortFacts("mlx5_3/1", "ib", sampled=True, state="ACTIVE", phys_state="LinkUp")
    for name, value in values.items():
        setattr(f, name, value)
    return f


def test_active_link_up_at_expected_rate_is_ok() -> None:
    assert judge_port(port(rate_gbps=400.0), 400.0, CFG, 0.0)[:2] == ("ok", ())


def test_unsampled_port_is_unknown() -> None:
    assert judge_port(PortFacts("mlx5_0/1", "ib"), None, CFG, 0.0).verdict == "unknown"


def test_state_down_and_phys_state_fail() -> None:
    verdict, reasons, _ = judge_port(port(state="DOWN", phys_state="Polling"), 400.0, CFG, 0.0)
    assert verdict == "fail"
    assert reasons == ("mlx5_3/1 state DOWN", "mlx5_3/1 phys_state Polling")


def test_rate_below_expected_warns_only_when_active() -> None:
    assert judge_port(port(rate_gbps=200.0), 400.0, CFG, 0.0)[:2] == (
        "warn",
        ("mlx5_3/1 rate 200 Gb/s < expected 400",),
    )
    down = judge_port(port(state="DOWN", rate_gbps=10.0), 400.0, CFG, 0.0)
    assert down.reasons == ("mlx5_3/1 state DOWN",)


def test_link_downed_fails_for_the_hold() -> None:
    f = port(fatal={"link_downed": (100.0, 1)})
    verdict, reasons, until = judge_port(f, None, CFG, 101.0)
    assert (verdict, reasons) == ("fail", ("mlx5_3/1 link_downed +1",))
    assert until == 100.0 + CFG.port_fatal_hold_s
    assert judge_port(f, None, CFG, until).verdict == "ok"


def test_symbol_errors_warn_within_window_and_fail_above_rate() -> None:
    recent = port(symbol_error_at=100.0, symbol_error_rate=0.0)
    assert judge_port(recent, None, CFG, 130.0).verdict == "warn"
    assert judge_port(recent, None, CFG, 100.0 + CFG.symbol_error_window_s).verdict == "ok"
    storm = port(symbol_error_at=100.0, symbol_error_rate=25.0)
    assert judge_port(storm, None, CFG, 100.0)[:2] == ("fail", ("mlx5_3/1 symbol_error 25/s",))


def test_pegged_symbol_error_warns_rate_unknown() -> None:
    f = port(symbol_error_saturated=True)
    assert judge_port(f, None, CFG, 0.0).verdict == "warn"


def test_error_and_discard_rates_warn() -> None:
    assert judge_port(port(rcv_error_rate=11.0), None, CFG, 0.0).verdict == "warn"
    assert judge_port(port(xmit_discard_rate=101.0), None, CFG, 0.0).verdict == "warn"
    assert judge_port(port(xmit_discard_rate=99.0), None, CFG, 0.0).verdict == "ok"


def test_a_nic_down_only_warns() -> None:
    nic = PortFacts("eth0", "eth", sampled=True, state="down")
    assert judge_port(nic, None, CFG, 0.0)[:2] == ("warn", ("eth0 down",))
