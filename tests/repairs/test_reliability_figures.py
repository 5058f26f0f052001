"""Failure rates, exact Poisson limits and the job forecast against hand-worked values."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest

from ledger.repairs.forecast import forecast
from ledger.repairs.ledger import compute
from ledger.repairs.poisson import garwood, poisson_cdf
from ledger.repairs.report import repairs_section
from ledger.report_section import ReportPeriod
from tests.repairs import scenario
from tests.repairs.scenario import T0

# Garwood's 95 % limits as tabulated (e.g. Ulm 1990, Am. J. Epidemiol. 131:373):
# k=0: 0-3.689, k=1: 0.0253-5.572, k=5: 1.623-11.668, k=10: 4.795-18.390.
TABLE = {0: (0.0, 3.689), 1: (0.0253, 5.572), 5: (1.623, 11.668), 10: (4.795, 18.390)}


@pytest.mark.parametrize("k", sorted(TABLE))
def test_garwood_limits_match_the_published_table(k: int) -> None:
    lower, upper = garwood(k)
    assert lower == pytest.approx(TABLE[k][0], abs=5e-4)
    assert upper == pytest.approx(TABLE[k][1], abs=5e-4)


def test_garwood_limits_are_the_poisson_tails_they_claim() -> None:
    lower, upper = garwood(3)
    assert 1 - poisson_cdf(2, lower) == pytest.approx(0.025, abs=1e-10)
    assert poisson_cdf(3, upper) == pytest.approx(0.025, abs=1e-10)


def test_forecast_by_hand() -> None:
    # 0.001 failures per node-hour, 16 nodes, 24 h, checkpoint of 6 minutes:
    # job rate 0.016/h; P = exp(-0.384) = 0.681131; MTBF 62.5 h;
    # tau = sqrt(2 x 0.1 x 62.5) = sqrt(12.5) = 3.535534 h; lost = 128 x tau/2 = 226.274 GPU-h.
    f = forecast(0.001, 16, 24.0, gpus_per_node=8, checkpoint_cost_h=0.1)
    assert f.p_no_interruption == pytest.approx(0.6811314, rel=1e-6)
    assert f.mtbf_job_h == pytest.approx(62.5)
    assert f.checkpoint_interval_h == pytest.approx(3.5355339, rel=1e-7)
    assert f.gpu_hours_lost_per_failure == pytest.approx(226.27417, rel=1e-7)


def test_forecast_restart_time_adds_to_every_gpu() -> None:
    f = forecast(0.001, 16, 24.0, checkpoint_cost_h=0.1, restart_h=0.5)
    assert f.gpu_hours_lost_per_failure == pytest.approx(226.27417 + 128 * 0.5, rel=1e-7)


def test_no_failure_seen_means_no_mtbf_not_infinity() -> None:
    f = forecast(0.0, 4, 10.0)
    assert (f.p_no_interruption, f.mtbf_job_h, f.checkpoint_interval_h) == (1.0, None, None)


def test_rates_from_the_scenario_by_hand(tmp_path: Path) -> None:
    scenario.write(tmp_path)
    led = compute(tmp_path, T0, T0 + timedelta(hours=48), None)
    # 4 nodes x 48 h, less gpu-a's 0.1 h unmonitored: 191.9 node-hours.
    node_days = 191.9 / 24
    assert led.exposure.node_days == pytest.approx(node_days)
    rates = {r.failure_class: r for r in led.rates}
    assert rates["gpu_xid"].failures == 2  # gpu-a XID 79, gpu-b XID 79
    assert rates["ecc_uncorrectable"].failures == 2  # U40 twice
    assert rates["unreachable"].failures == 1
    every = rates["all"]
    assert every.per_node_day == pytest.approx(5 / node_days)
    assert every.per_gpu_day == pytest.approx(5 / (node_days * 8))
    lo, hi = garwood(5)
    assert every.node_day_limits == pytest.approx((lo / node_days, hi / node_days))
    # gpu-b: 48 h observed, 2 failures; gpu-a: 47.9 h, 1 failure.
    assert led.mtbf_hours["gpu-b"] == pytest.approx(24.0)
    assert led.mtbf_hours["gpu-a"] == pytest.approx(47.9)
    one = led.forecasts[0]
    assert one.nodes == 1
    assert one.p_no_interruption == pytest.approx(math.exp(-5 / 191.9 * 24))


def test_report_section_has_the_model_and_the_observation_period(tmp_path: Path) -> None:
    scenario.write(tmp_path)
    section = repairs_section(ReportPeriod(tmp_path, T0, T0 + timedelta(hours=48), None))
    assert section.key == "repairs"
    body = section.markdown()
    assert "Observed 2026-11-02T00:00:00Z to 2026-11-04T00:00:00Z" in body
    assert "Young/Daly" in body
    data = section.to_json()
    assert data["observed"]["node_days"] == pytest.approx(191.9 / 24)
    assert [r["kind"] for r in data["repairs"]][:2] == ["gpu_swap", "reboot"]


def test_large_counts_keep_exact_tails() -> None:
    # A month of a large fleet: thousands of failures. The limits still satisfy their
    # defining tails, and sit near the normal approximation k +- 1.96 sqrt(k).
    k = 5798
    lower, upper = garwood(k)
    assert 1 - poisson_cdf(k - 1, lower) == pytest.approx(0.025, abs=1e-9)
    assert poisson_cdf(k, upper) == pytest.approx(0.025, abs=1e-9)
    assert lower == pytest.approx(k - 1.96 * k**0.5, abs=2)
    assert upper == pytest.approx(k + 1.96 * k**0.5, abs=3)
