"""[cluster] running as one of several shards, joined through NATS (docs/scale-out.md)."""

from __future__ import annotations

from pydantic import Field, field_validator

from cluster.shards import STALE_INTERVALS, ShardSpec, parse_shard
from fleet.settings.base import Section


class ClusterSection(Section):
    """[cluster] running as one of several shards, joined through NATS (docs/scale-out.md)."""

    shard: str | None = None
    """This collector's share of the hosts as "K/N" (shard K of N, 1-based): it watches
    only the hosts that rendezvous hashing on the host name assigns to K. Unset: every
    host. ``gpufleet serve --shard K/N`` overrides it."""
    nats_url: str | None = None
    """NATS server the shards publish to and dashboards attach through, e.g.
    "nats://127.0.0.1:4222". Unset: the shard publishes nothing."""
    stale_intervals: float = Field(default=STALE_INTERVALS, ge=1.0, le=100.0)
    """A shard silent for this many of its tick intervals has its nodes shown as
    `unmonitored` by attached dashboards (fewer flap on a loaded shard host)."""

    @field_validator("shard")
    @classmethod
    def _valid_shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)  # raises ValueError saying what was expected
        return value

    @field_validator("nats_url")
    @classmethod
    def _valid_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("nats://", "tls://")):
            raise ValueError(f"expected a nats:// or tls:// URL, got {value!r}")
        return value

    @property
    def shard_spec(self) -> ShardSpec | None:
        """``shard`` parsed, or None when this collector watches every host."""
        return None if self.shard is None else parse_shard(self.shard)
