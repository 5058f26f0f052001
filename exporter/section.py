"""[metrics] the Prometheus endpoint (docs/metrics.md)."""

from pydantic import field_validator

from exporter.addr import DEFAULT_METRICS_ADDR, parse_addr
from fleet.settings.base import Section


class MetricsSection(Section):
    """[metrics] the Prometheus endpoint (docs/metrics.md)."""

    addr: str = DEFAULT_METRICS_ADDR
    """Where ``gpufleet serve`` listens for scrapes, as host:port. Loopback by default;
    "0.0.0.0:9400" exposes the fleet's telemetry to every network this host is on.
    ``--metrics-addr`` overrides it."""
    gzip: bool = True
    """Compress /metrics when the scraper accepts gzip (Prometheus does): a twentieth
    of the bytes (1,000 nodes: 57 MiB to 2.8 MiB) for ~40 ms of CPU a scrape, about what
    the socket writes it saves (bench/bench_gzip.py: a served scrape 243-265 ms gzipped,
    254-258 ms plain)."""
    in_dashboard: bool = False
    """Also serve /metrics while ``gpufleet watch`` or ``demo`` runs."""
    web_config_file: str | None = None
    """A Prometheus ``web.yml`` (the exporter-toolkit format: ``tls_server_config``,
    ``basic_auth_users`` with bcrypt hashes) that puts TLS and basic auth on the
    endpoint of ``gpufleet serve``; relative to this config file's directory."""

    raw_port_counters: bool = False
    """Also expose ``gpufleet_port_raw_value``, every raw cumulative port counter as the
    node reports it. Off: they were 40 % of the series (16 nodes: 4,512 of 11,172) and
    repeat what the per-second gauges say; ``rate()`` over them is
    ``gpufleet_port_receive_bytes_per_second`` and ``gpufleet_port_errors_per_second``
    (docs/metrics.md, "Raw port counters")."""

    @field_validator("addr")
    @classmethod
    def _valid_addr(cls, value: str) -> str:
        parse_addr(value)  # raises ValueError with what was expected
        return value
