"""An unknown configuration key names the known key it is closest to, at its own place."""

from __future__ import annotations

import tomllib

import pytest

from gpufleet.config import ConfigError, parse_config


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(tomllib.loads(text), source="fleet.toml")
    return str(caught.value)


def test_a_misspelt_key_suggests_the_near_one() -> None:
    message = _error('[fleet]\nhosts = ["a"]\nhost_key_polcy = "strict"\n')
    assert message == (
        "fleet.toml: unknown key 'fleet.host_key_polcy' (did you mean 'host_key_policy'?)"
    )


def test_a_key_inside_a_table_of_tables_is_matched_against_that_table() -> None:
    message = _error('[fleet]\nhosts = ["a"]\n[fleet.overrides."a"]\nprot = 1\n')
    assert "unknown key 'fleet.overrides.a.prot' (did you mean 'port'?)" in message


def test_a_key_near_nothing_gets_no_guess() -> None:
    message = _error('[fleet]\nhosts = ["a"]\nzzzzqqq = 1\n')
    assert message == "fleet.toml: unknown key 'fleet.zzzzqqq'"
