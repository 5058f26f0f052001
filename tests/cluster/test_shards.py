"""Rendezvous hashing: one owner per host, stable, and ~1/N moved when a shard is added."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.shards import ShardSpec, assign, format_assignment, owner, parse_shard
from collectors.ssh.target import NodeTarget
from gpufleet.config import ConfigError, parse_config
from gpufleet.shard import shard_data_dir, shard_targets

HOSTS = [f"gpu-{i:05d}" for i in range(1, 5001)]


@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=50), st.integers(1, 40))
def test_every_host_has_exactly_one_owner(hosts: list[str], count: int) -> None:
    shards = assign(hosts, count)
    assert sorted(h for names in shards.values() for h in names) == sorted(hosts)
    for index, names in shards.items():
        spec = ShardSpec(index, count)
        assert all(spec.owns(h) for h in names)


def test_adding_a_shard_moves_about_one_in_n_plus_one_and_only_to_the_new_shard() -> None:
    for count in (2, 3, 7, 12):
        before = {h: owner(h, count) for h in HOSTS}
        after = {h: owner(h, count + 1) for h in HOSTS}
        moved = [h for h in HOSTS if before[h] != after[h]]
        assert all(after[h] == count + 1 for h in moved)  # never between old shards
        share = len(moved) / len(HOSTS)
        assert abs(share - 1 / (count + 1)) < 0.25 / (count + 1), (count, share)


def test_shares_are_balanced() -> None:
    sizes = [len(v) for v in assign(HOSTS, 5).values()]
    assert min(sizes) > 0.85 * len(HOSTS) / 5 and max(sizes) < 1.15 * len(HOSTS) / 5


def test_the_owner_is_the_same_in_every_process() -> None:
    # Shards and viewers are separate processes: str hash() salting must not matter.
    code = "from cluster.shards import owner; print([owner(f'gpu-{i}', 7) for i in range(50)])"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str([owner(f"gpu-{i}", 7) for i in range(50)]), out.stderr
    assert owner("gpu-002", 3) == 2 and owner("gpu-001", 3) == 3  # pinned: a change is noticed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3", "expected K/N"),
        ("0/3", "shard number must be 1 to 3"),
        ("4/3", "shard number must be 1 to 3"),
        ("1/0", "shard count must be 1"),
    ],
)
def test_bad_shard_specs_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_shard(text)


def test_cluster_section_names_the_key_on_a_bad_shard() -> None:
    with pytest.raises(ConfigError, match=r"key 'cluster\.shard'.*must be 1 to 2"):
        parse_config({"cluster": {"shard": "3/2"}})
    with pytest.raises(ConfigError, match=r"key 'cluster\.nats_url'"):
        parse_config({"cluster": {"nats_url": "http://x"}})
    spec = parse_config({"cluster": {"shard": " 2 / 4 "}}).cluster.shard_spec
    assert spec == ShardSpec(2, 4) and str(spec) == "2/4"


def test_format_assignment_lists_every_host_under_its_shard() -> None:
    text = format_assignment(["gpu-001", "gpu-002", "gpu-003"], 2)
    lines = text.splitlines()
    assert lines[0].startswith("shard 1/2: ") and any(ln.startswith("shard 2/2: ") for ln in lines)
    assert sorted(ln.strip() for ln in lines if ln.startswith("  ")) == [
        "gpu-001",
        "gpu-002",
        "gpu-003",
    ]


def test_shard_directory_and_targets(tmp_path: Path) -> None:
    targets = [NodeTarget(name=h, host=h) for h in HOSTS[:30]]
    spec = ShardSpec(2, 3)
    mine = shard_targets(targets, spec)
    assert [t.name for t in mine] == assign(HOSTS[:30], 3)[2]
    assert shard_targets(targets, None) == targets
    assert shard_data_dir(tmp_path, spec) == tmp_path / "shard=2"
    assert shard_data_dir(tmp_path, None) == tmp_path
