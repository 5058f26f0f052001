"""The prometheus_client path: a custom collector that reads the latest snapshot per scrape.

Nothing is registered at import time; the caller registers the collector on a
registry it owns (``registry.register(FleetCollector(runtime.latest))``). This
path builds one ``Metric`` object per family and one ``Sample`` per series, which
is clear and compatible but slow for thousands of GPUs: the endpoint serves the
text built by :mod:`exporter.text` instead, from the same catalog.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter.catalog import (
    FLEET,
    GPU,
    GPU_XID,
    LINK_EVENTS,
    NODE,
    SCRAPE_DURATION,
    SLA,
    families,
    port_kind,
)
from exporter.families import EntityKind, Family
from exporter.node_reason import NODE_REASON, reason_series
from exporter.workload import WORKLOAD_INFO, workload_series
from exporter.xids import XidTally
from fleet.model import FleetSnapshot

SnapshotSource = Callable[[], FleetSnapshot | None]


class FleetCollector(Collector):
    """Builds every ``gpufleet_*`` family from ``source()`` at scrape time.

    Args:
        source: returns the latest snapshot, or None before the first one.
        xids: the running XID tally; share the one subscribed to the runtime so
            events between scrapes are counted. Without one the collector keeps its
            own, which only sees the snapshots it is asked to expose.
        raw_port_counters: also expose ``gpufleet_port_raw_value`` (off by default).
    """

    def __init__(
        self,
        source: SnapshotSource,
        *,
        xids: XidTally | None = None,
        raw_port_counters: bool = False,
    ) -> None:
        self._source = source
        self._xids = xids if xids is not None else XidTally()
        self._previous_s: float | None = None
        self._families = families(raw_port_counters)
        self._port = port_kind(raw_port_counters)

    def describe(self) -> Iterable[Metric]:
        """The families without samples, so a registry can detect name clashes."""
        return [_empty(family) for family in (*self._families, NODE_REASON, WORKLOAD_INFO)]

    def collect(self) -> Iterable[Metric]:
        """Every family, with the samples of the latest snapshot."""
        started = time.perf_counter()
        snapshot = self._source()
        self._xids.observe(snapshot)
        metrics = {family: _empty(family) for family in self._families}
        if snapshot is not None:
            _add_snapshot(metrics, snapshot, self._port)
        for labels, count in self._xids.counts():
            metrics[GPU_XID].add_metric(labels, count)
        for link, count in self._xids.link_counts():
            metrics[LINK_EVENTS].add_metric(link, count)
        if self._previous_s is not None:
            metrics[SCRAPE_DURATION].add_metric([], self._previous_s)
        self._previous_s = time.perf_counter() - started
        return [*metrics.values(), *_snapshot_infos(snapshot)]


def _snapshot_infos(snapshot: FleetSnapshot | None) -> list[Metric]:
    """The info families after the catalog's, as the text renderer ends its body."""
    reasons, workload = _empty(NODE_REASON), _empty(WORKLOAD_INFO)
    for reason in reason_series(snapshot):
        reasons.add_metric(reason, 1)
    for job in workload_series(() if snapshot is None else snapshot.jobs):
        workload.add_metric(job, 1)
    return [reasons, workload]


Families = dict[Family, GaugeMetricFamily | CounterMetricFamily]


def _empty(family: Family) -> GaugeMetricFamily | CounterMetricFamily:
    if family.type == "counter":
        return CounterMetricFamily(family.name, family.help, labels=family.labels)
    return GaugeMetricFamily(family.name, family.help, labels=family.labels)


def _add_snapshot(metrics: Families, snapshot: FleetSnapshot, port_kind: EntityKind) -> None:
    _add_entity(metrics, FLEET, snapshot, ())
    if snapshot.sla is not None:
        _add_entity(metrics, SLA, snapshot.sla, (snapshot.sla.month,))
    for node in snapshot.nodes:
        for gpu in node.gpus:
            _add_entity(metrics, GPU, gpu, (node.name, str(gpu.index), gpu.uuid, gpu.name))
        for port in _ports(node):
            _add_entity(metrics, port_kind, port, (node.name, port.name, port.kind))
        _add_entity(metrics, NODE, node, (node.name,))


def _ports(node: Any) -> Iterator[Any]:
    yield from node.ports
    yield from node.nics


def _add_entity(metrics: Families, kind: EntityKind, entity: Any, base: tuple[str, ...]) -> None:
    for spec in kind.specs:
        metric = metrics[spec.family]
        for extra, value in spec.series(entity):
            metric.add_metric([*base, *extra], value)
