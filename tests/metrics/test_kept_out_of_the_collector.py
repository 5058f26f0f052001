"""What the renderer keeps between scrapes stays out of the garbage collector's walks.

The runtime's scheduled full collection (gpufleet.runtime.HeapFreezer) walks every
reference held by a tracked container that is not frozen. The renderer keeps label
heads, counter layouts and one-hot texts for the life of the process; kept as lists,
what it kept was once ~600,000 references at 1,000 nodes walked every 30 s (the largest
part of a 40-60 ms pause in ``watch``). Kept as tuples of strings and numbers they leave
the collector's view at the first collection that sees them.
"""

from __future__ import annotations

import gc
from dataclasses import replace

from bench.lib.metrics_fleets import fleet
from exporter.text import NODES_PER_CHUNK, ExpositionRenderer
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot

_ENTITIES = (FleetSnapshot, NodeSnapshot, GpuSnapshot, PortSnapshot)


def _walked_references(root: object) -> int:
    """References in lists and dicts reachable from ``root`` that a collection walks.

    The walk does not enter the fleet's own objects (the renderer keeps the last
    entities on purpose, and they are the state's) nor types, modules and functions.
    """
    seen: set[int] = set()
    stack = [root]
    walked = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, (type, *_ENTITIES)):
            continue
        if type(obj).__name__ in ("module", "function", "method", "cell"):
            continue
        seen.add(id(obj))
        referents = gc.get_referents(obj)
        if type(obj) in (list, dict):
            walked += len(referents)
        stack.extend(referents)
    return walked


def _counters_moving(snapshot: FleetSnapshot, step: int) -> FleetSnapshot:
    """``snapshot`` with one raw counter of each port moved by ``step`` (the rest held)."""
    nodes = []
    for node in snapshot.nodes:
        ports = tuple(
            replace(port, counters=((port.counters[0][0], step), *port.counters[1:]))
            for port in node.ports
        )
        nodes.append(replace(node, ports=ports))
    return replace(snapshot, nodes=tuple(nodes))


def test_what_the_renderer_keeps_between_scrapes_is_not_walked_by_full_collections() -> None:
    renderer = ExpositionRenderer(raw_port_counters=True)
    base = fleet(NODES_PER_CHUNK * 2 + 3, gpus=8, ports=8)
    for step in range(4):  # one counter moves, the rest hold still
        renderer.render(_counters_moving(base, step))
    gc.collect()
    # Per chunk, a handful of small lists and dicts (the block's tables of kept texts);
    # label heads, baked counter templates and slow columns once held ~31,000 references
    # here as lists.
    assert _walked_references(renderer) < 1_000
