"""Property: no config, however made, ends in anything but a Config or one ConfigError.

Two ways in: TOML text mutated byte by byte from a real config (and raw bytes), read
through ``load_config``; and well-formed TOML data with arbitrary values in every
known key, validated and turned into node targets as the CLI does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.config import Config, ConfigError, load_config, parse_config
from gpufleet.targets import options_from_config, targets_from_config

VALID = b"""\
[fleet]
hosts = ["gpu-[001-004]", "10.0.0.7"]
user = "ops"
interval = 1.0
max_hosts = 100

[fleet.overrides."gpu-001"]
port = 2222

[health]

[sla]
committed_nodes = 4
gpu_hour_price = 2.5
tiers = [{ below = 99.5, credit_percent = 10 }]
"""

SECTION_KEYS = {
    "fleet": ["hosts", "hostfile", "user", "port", "interval", "max_hosts", "overrides",
              "known_hosts", "remote_cache_dir", "jump_host", "expected_gpus", "python"],
    "sla": ["committed_nodes", "gpu_hour_price", "tiers", "slo_percent", "grace_minutes"],
    "metrics": ["addr", "gzip"],
    "history": ["ring_minutes", "flush_interval_s"],
    "ui": ["theme"],
}  # fmt: skip

toml_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["gpu-[1-10000000]", "r[1-3000]-n[1-3000]", "/dev/zero", "~x", "$(id)"]),
)
toml_values = st.recursive(
    toml_leaves,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def config_data(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for section, keys in SECTION_KEYS.items():
        if draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
            data[section] = {key: draw(toml_values) for key in chosen}
    if draw(st.booleans()):
        data[draw(st.text(max_size=8))] = draw(toml_values)
    return data


@st.composite
def mutated_text(draw: st.DrawFn) -> bytes:
    text = bytearray(VALID)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = draw(st.binary(min_size=1, max_size=8))
        if action == "insert":
            text[at:at] = chunk
        elif action == "delete":
            del text[at : at + len(chunk)]
        else:
            text[at : at + len(chunk)] = chunk
    return bytes(text)


def _use(config: Config, source: Path) -> None:
    """What the CLI does next with a loaded config: targets and SSH options."""
    try:
        targets_from_config(config.fleet, base_dir=source.parent, source=str(source))
    except ConfigError as exc:
        assert str(source) in str(exc)
    options_from_config(config.fleet)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.one_of(mutated_text(), st.binary(max_size=400)))
def test_any_config_file_loads_or_fails_with_one_config_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.toml"
        path.write_bytes(content)
        try:
            config = load_config(path)
        except ConfigError as exc:
            assert str(path) in str(exc)
            assert "Traceback" not in str(exc)
            return
        _use(config, path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=config_data())
def test_any_config_data_validates_or_fails_with_one_config_error(data: dict[str, Any]) -> None:
    try:
        config = parse_config(data, source="fuzz.toml")
    except ConfigError as exc:
        lines = str(exc).splitlines()
        assert lines and all(line.startswith("fuzz.toml: ") for line in lines)
        assert all(len(line) < 1000 for line in lines)
        return
    _use(config, Path("/nonexistent/fuzz.toml"))
