"""Prometheus exposition of the fleet (docs/metrics.md).

- ``catalog`` / ``gpu_catalog``: every ``gpufleet_*`` family and where its values come from;
- ``collector.FleetCollector``: the prometheus_client custom collector (injected registry);
- ``text.ExpositionRenderer`` / ``render_exposition``: the same text, fast, for /metrics;
- ``server.MetricsServer``: the asyncio HTTP endpoint; ``endpoint.start_metrics_endpoint``
  wires it to a running fleet.

Nothing is registered anywhere at import time, and this file imports nothing, so
the config can use ``exporter.addr`` without loading prometheus_client.
"""
