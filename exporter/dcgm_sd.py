"""Prometheus HTTP service discovery (``http_sd_configs``) for one target per node.

One gpufleet process serves the whole fleet, but dashboards built for dcgm-exporter
pick hosts by ``instance`` (one exporter per node). ``/sd`` answers Prometheus'
HTTP SD format (a JSON list of target groups) with one group per node: the
address is this endpoint's, the metrics path serves only that node
(``/metrics/dcgm/<node>``) and ``instance`` is the node's name, so each node is
its own target, its own ``up`` series and its own ``instance`` value.
"""

from __future__ import annotations

import json
import urllib.parse

from fleet.model import FleetSnapshot

DCGM_PATH = "/metrics/dcgm"
SD_PATH = "/sd"


def node_path(node: str) -> str:
    """The metrics path that serves ``node`` alone."""
    return f"{DCGM_PATH}/{urllib.parse.quote(node, safe='')}"


def node_from_path(path: str) -> str | None:
    """The node a ``/metrics/dcgm/<node>`` path names, or None for another path."""
    prefix = DCGM_PATH + "/"
    if not path.startswith(prefix) or len(path) == len(prefix):
        return None
    return urllib.parse.unquote(path[len(prefix) :])


def sd_targets(snapshot: FleetSnapshot | None, address: str) -> bytes:
    """The HTTP SD document: one target group per node of ``snapshot``, all at ``address``.

    Args:
        snapshot: the latest snapshot (no nodes before the first one).
        address: ``host:port`` Prometheus reaches this endpoint at (the request's Host).
    """
    nodes = () if snapshot is None else snapshot.nodes
    groups = [
        {
            "targets": [address],
            "labels": {"instance": node.name, "__metrics_path__": node_path(node.name)},
        }
        for node in nodes
    ]
    return json.dumps(groups).encode("utf-8")
