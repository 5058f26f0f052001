"""Cost of the dcgm-exporter-shaped exposition, against a prometheus_client baseline.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_dcgm.py [--nodes 1000] [--gpus 8]``

Measured in the same run on the same snapshots (every ``NodeSnapshot`` new, as at 1 Hz):

* ``whole``: :class:`exporter.dcgm.DcgmExposition` rendering ``/metrics/dcgm``;
* ``round``: one scrape of ``/metrics/dcgm/<node>`` per node, what Prometheus does
  with the ``/sd`` targets (one target per node), summed over the fleet;
* ``baseline``: the same series built as ``GaugeMetricFamily`` objects in a custom
  collector and serialised by ``generate_latest`` (the usual prometheus_client way;
  gauges throughout, since its counters would rename ``..._TOTAL`` to ``..._TOTAL_total``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bench.lib.metrics_fleets import fleet
from exporter.dcgm import DcgmExposition
from exporter.dcgm_fields import FIELDS, LABELS, XID_ERRORS
from exporter.xids import XidTally
from fleet.model import FleetSnapshot


def variants(base: FleetSnapshot, count: int) -> list[FleetSnapshot]:
    """``count`` snapshots of the same GPUs with new values and new node objects."""
    return [
        replace(
            base,
            taken_at=base.taken_at + k,
            nodes=tuple(
                replace(n, gpus=tuple(replace(g, power_w=100.0 + k) for g in n.gpus))
                for n in base.nodes
            ),
        )
        for k in range(count)
    ]


class BaselineCollector(Collector):
    """The DCGM families as prometheus_client metric objects, one sample per series."""

    def __init__(self, snapshot: FleetSnapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        families = {f.name: GaugeMetricFamily(f.name, f.help, labels=LABELS) for f in FIELDS}
        xids = GaugeMetricFamily(XID_ERRORS.name, XID_ERRORS.help, labels=LABELS)
        for node in self.snapshot.nodes:
            for gpu in node.gpus:
                labels = [
                    str(gpu.index),
                    gpu.uuid,
                    gpu.pci_bus_id or "",
                    f"nvidia{gpu.index}",
                    gpu.name,
                    node.name,
                    node.name,
                    node.driver or "",
                ]
                for field in FIELDS:
                    value = field.read(gpu)
                    if value is not None:
                        families[field.name].add_metric(labels, float(value))
                xids.add_metric(labels, 0.0)
        return [*families.values(), xids]


def timed(run: Callable[[FleetSnapshot], object], snapshots: list[FleetSnapshot]) -> float:
    """Median seconds of ``run`` over the snapshots."""
    times = []
    for snapshot in snapshots:
        started = time.perf_counter()
        run(snapshot)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    snapshots = variants(fleet(args.nodes, args.gpus), args.repeat)
    dcgm = DcgmExposition(XidTally())
    names = [n.name for n in snapshots[0].nodes]

    def whole(snapshot: FleetSnapshot) -> bytes | None:
        return dcgm.render(snapshot)

    def round_(snapshot: FleetSnapshot) -> int:
        return sum(len(dcgm.render(snapshot, name) or b"") for name in names)

    def baseline(snapshot: FleetSnapshot) -> bytes:
        registry = CollectorRegistry()
        registry.register(BaselineCollector(snapshot))
        return generate_latest(registry)

    ours = whole(snapshots[0]) or b""
    theirs = baseline(snapshots[0])
    series = sum(1 for line in ours.splitlines() if not line.startswith(b"#"))
    assert series == sum(1 for line in theirs.splitlines() if not line.startswith(b"#"))
    t_whole = timed(whole, snapshots)
    t_round = timed(round_, snapshots)
    t_base = timed(baseline, snapshots)
    gpus = args.nodes * args.gpus
    print(f"dcgm exposition, {args.nodes} nodes x {args.gpus} GPUs = {gpus} GPUs, {series} series")
    print(f"  whole /metrics/dcgm       {t_whole * 1000:8.1f} ms")
    print(f"  per-node round (/sd)      {t_round * 1000:8.1f} ms  ({args.nodes} scrapes)")
    print(f"  baseline generate_latest  {t_base * 1000:8.1f} ms")
    print(f"  ratio baseline / whole    {t_base / t_whole:8.1f}x")


if __name__ == "__main__":
    main()
