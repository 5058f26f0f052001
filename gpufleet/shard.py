"""One shard's share of a fleet: its targets, its history directory, a targets file.

A shard is ``gpufleet serve`` over the hosts rendezvous hashing gives it, recording
into ``DATA/shard=K`` so several shards can share one history root (each holds the
lock of its own directory) and ``cluster.history`` can read them all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.shards import ShardSpec
from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from gpufleet.config import Config

if TYPE_CHECKING:
    from cluster.takeover import Takeover

SHARD_DIR_PREFIX = "shard="

# The NodeTarget fields a targets file may set (the demo's loopback nodes need a port
# per node, which [fleet] cannot express for hosts that are all 127.0.0.1).
_TARGET_FIELDS = (
    "name", "host", "port", "user", "identity_files", "python", "interval",
    "slow_interval", "expected_gpus", "known_hosts", "host_key_policy", "remote_cache_dir",
)  # fmt: skip


def shard_targets(targets: Sequence[NodeTarget], spec: ShardSpec | None) -> list[NodeTarget]:
    """The targets ``spec`` owns (all of them without a spec)."""
    if spec is None:
        return list(targets)
    return [t for t in targets if spec.owns(t.name)]


def shard_config(config: Config, spec: ShardSpec | None) -> Config:
    """The configuration a shard runs with: no SLA header of its own.

    A shard's history holds only its nodes; judged against the whole fleet's contract,
    every other node would count as missing. ``gpufleet sla`` reads all shards instead.
    """
    if spec is None or spec.count == 1:
        return config
    return config.model_copy(update={"sla": None})


def shard_takeover(
    config: Config, spec: ShardSpec, targets: Sequence[NodeTarget], options: SshOptions
) -> Takeover:
    """Shard ``spec``'s takeover of silent shards' nodes, over every shard's ``targets``.

    Adopted nodes run in a ``FleetRuntime`` of their own without history: the shard's
    ``DATA/shard=K`` holds its own nodes, as the cross-shard ledger reads it.
    """
    from cluster.takeover import FosterFleet, Takeover
    from gpufleet.runtime import FleetRuntime

    def foster(adopted: Sequence[NodeTarget]) -> FosterFleet:
        return FleetRuntime(config, adopted, data_dir=None, ssh_options=options)

    return Takeover(
        spec,
        targets,
        config.cluster.takeover_after_s,
        config.fleet.interval,
        foster,
        keys=config.cluster.shard_keys(),
    )


def shard_data_dir(data_dir: Path, spec: ShardSpec | None) -> Path:
    """``DATA/shard=K`` for a shard, ``DATA`` itself for an unsharded collector."""
    return data_dir if spec is None else data_dir / f"{SHARD_DIR_PREFIX}{spec.index}"


def write_targets_file(path: Path, targets: Sequence[NodeTarget]) -> None:
    """Write ``targets`` as JSON for ``serve --targets-file`` (known_hosts must be a path)."""
    rows: list[dict[str, Any]] = []
    for target in targets:
        if not isinstance(target.known_hosts, str):
            raise ValueError(f"{target.name}: a targets file needs a known_hosts path")
        rows.append({field: getattr(target, field) for field in _TARGET_FIELDS})
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")


def read_targets_file(path: Path) -> list[NodeTarget]:
    """The targets of a file written by :func:`write_targets_file`.

    Raises:
        ValueError: the file is unreadable or a row is not a target (naming the row).
    """
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a targets file: {exc}") from None
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list of targets")
    targets = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) - set(_TARGET_FIELDS) or "name" not in row:
            raise ValueError(f"{path}: row {i}: expected an object with fields {_TARGET_FIELDS}")
        row["identity_files"] = tuple(row.get("identity_files") or ())
        targets.append(NodeTarget(**row))
    return targets
