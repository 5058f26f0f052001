"""Which shard owns which host: rendezvous (highest-random-weight) hashing on the name.

Every shard scores every host with a hash of (shard number, host name) and the
highest score owns the host. The owner depends on nothing but the name and the
shard count, so every shard, viewer and ``gpufleet check --shards N`` agree with no
coordination, and going from N to N+1 shards moves only the hosts the new shard
wins: about 1/(N+1) of them, none between old shards.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 4096
# Silence, in a shard's own tick intervals, before viewers call its nodes unmonitored.
# Three flapped on a loaded 2-core host (summaries up to ~4.7 s old at p99, bench_scale).
STALE_INTERVALS = 5.0
# Seconds without a shard's heartbeat before the others collect its nodes: three times
# the viewers' 5 s of silence at the default 1 s interval, so a loaded host's late ticks
# (p99 ~4.7 s, bench_scale) move no node, and viewers call the shard silent first.
TAKEOVER_AFTER_S = 15.0


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Shard ``index`` of ``count`` (1-based, as written in ``--shard K/N``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, host: str) -> bool:
        """True when this shard collects ``host``."""
        return owner(host, self.count) == self.index


def parse_shard(text: str) -> ShardSpec:
    """``"K/N"`` as a :class:`ShardSpec`.

    Raises:
        ValueError: not two integers with 1 <= K <= N <= 4096 (the message says so).
    """
    match = _SPEC.match(text)
    if match is None:
        raise ValueError(f"expected K/N such as '1/3', got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shard count must be 1 to {MAX_SHARDS}, got {count}")
    if not 1 <= index <= count:
        raise ValueError(f"shard number must be 1 to {count}, got {index}")
    return ShardSpec(index, count)


def _score(host: str, shard: int) -> int:
    # blake2b rather than hash(): Python salts str hashes per process, shards must agree.
    digest = hashlib.blake2b(f"{shard}\x00{host}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(host: str, count: int) -> int:
    """The shard (1 to ``count``) that owns ``host``."""
    return owner_among(host, range(1, count + 1))


def owner_among(host: str, shards: Iterable[int]) -> int:
    """The shard of ``shards`` that scores ``host`` highest.

    Over the live shards only, this is who collects a silent shard's host while it is
    away: each host goes to the live shard that scores it highest, so a dead shard's
    hosts spread over the others and no host of a live shard moves.

    Raises:
        ValueError: ``shards`` is empty.
    """
    return max(shards, key=lambda k: _score(host, k))


def assign(hosts: Iterable[str], count: int) -> dict[int, list[str]]:
    """Every shard's hosts (in the given order); a shard with no host maps to ``[]``."""
    out: dict[int, list[str]] = {k: [] for k in range(1, count + 1)}
    for host in hosts:
        out[owner(host, count)].append(host)
    return out


def shard_hosts(hosts: Sequence[str], spec: ShardSpec) -> list[str]:
    """The hosts of ``spec``'s share, in the given order."""
    return [h for h in hosts if owner(h, spec.count) == spec.index]


def format_assignment(hosts: Sequence[str], count: int) -> str:
    """``gpufleet check --shards N``: one line per shard with its host count and hosts."""
    lines = []
    for index, names in assign(hosts, count).items():
        lines.append(f"shard {index}/{count}: {len(names)} hosts")
        lines.extend(f"  {name}" for name in names)
    return "\n".join(lines)
