"""The [sla] and [history] tables: defaults, exact decimals, errors that name the key."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpufleet.config import ConfigError, parse_config
from history.section import parse_duration


def test_a_contract_reads_prices_and_tiers_as_exact_decimals() -> None:
    config = parse_config(
        {
            "sla": {
                "committed_nodes": 4,
                "gpu_hour_price": 2.37,
                "tiers": [{"below": 99.9, "credit_percent": 10}],
            }
        }
    )
    assert config.sla is not None
    assert config.sla.gpu_hour_price == Decimal("2.37")
    assert config.sla.tiers[0].below == Decimal("99.9")
    assert (config.sla.credit_model, config.sla.unreachable_counts_as_down) == ("tiered", True)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"committed_nodes": 4, "tiers": [{"below": "high", "credit_percent": 10}]},
            "key 'sla.tiers.0.below'",
        ),
        ({"committed_nodes": 0}, "key 'sla.committed_nodes'"),
        ({"committed_nodes": 4, "credit_model": "generous"}, "key 'sla.credit_model'"),
        ({"committed_nodes": 4, "grace": 5}, "unknown key 'sla.grace'"),
    ],
)
def test_bad_contract_values_name_the_file_and_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^gpufleet\.toml: ") as info:
        parse_config({"sla": table}, source="gpufleet.toml")
    assert message in str(info.value)


def test_history_durations() -> None:
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("90m") == 5400
    config = parse_config({"history": {"export_rolling_window": "24h", "retention_days": 30}})
    assert config.history.export_rolling_window_s == 86400
    with pytest.raises(ConfigError, match=r"key 'history\.export_rolling_window'"):
        parse_config({"history": {"export_rolling_window": "a week"}})
