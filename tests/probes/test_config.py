"""The [probes] table: defaults, validation with the key named, and the runner's settings."""

from __future__ import annotations

import pytest

from gpufleet.config import ConfigError, parse_config


def test_defaults_are_a_quick_suite_with_python3() -> None:
    settings = parse_config({}).probes.settings()
    assert (settings.python, settings.timeout_s, settings.gpus) == ("python3", 120.0, "all")
    assert (settings.slow_fraction, settings.straggler_fraction) == (0.8, 0.10)


def test_per_node_python_overrides_the_default() -> None:
    section = parse_config(
        {
            "probes": {
                "probe_python": "~/venv/bin/python",
                "python_overrides": {"gpu-007": "/opt/py"},
            }
        }
    ).probes
    settings = section.settings()
    assert settings.python_for("gpu-007") == "/opt/py"
    assert settings.python_for("gpu-001") == "~/venv/bin/python"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"gpus": "0;reboot"}, "probes.gpus"),
        ({"probe_python": "python3 -X dev"}, "probes.probe_python"),
        ({"suite": "long"}, "probes.suite"),
        ({"timeout_s": 0}, "probes.timeout_s"),
        ({"straggler_fraction": 1.5}, "probes.straggler_fraction"),
        ({"unknown": 1}, "probes.unknown"),
    ],
)
def test_bad_values_name_their_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_config({"probes": table}, source="fleet.toml")
