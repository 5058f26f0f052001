"""Fleet snapshots from the real FleetRuntime fed canned agent lines, without SSH.

Shared by the in-process benches and the tests that compare a reader of the tick's
columns with the object path on the state's own (lazy) snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.lib.fleet_nodes import CannedNode
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from fleet.model import FleetSnapshot
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime

T0 = 1.8e9
LineEdit = Callable[[bytes, int, int], bytes]  # (line, node number, tick) -> line


def state_ticks(
    count: int,
    ticks: int = 3,
    edit: LineEdit | None = None,
    t0: float = T0,
    edit_hello: LineEdit | None = None,
) -> list[FleetSnapshot]:
    """``ticks`` consecutive snapshots of ``count`` canned nodes (8 GPUs, 8 ports each);
    ``edit`` may change any node's sample line before it is ingested, ``edit_hello`` its
    hello (tick 0)."""
    names = [f"node-{i:03d}" for i in range(1, count + 1)]
    runtime = FleetRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
    for i, (name, node) in enumerate(zip(names, nodes, strict=True)):
        hello = node.hello(t0) if edit_hello is None else edit_hello(node.hello(t0), i, 0)
        runtime._state.ingest(NodeMessage(name, decode_line(hello), t0))
    out = []
    for k in range(1, ticks + 1):
        for i, (name, node) in enumerate(zip(names, nodes, strict=True)):
            line = node.sample(t0 + k)
            if edit is not None:
                line = edit(line, i, k)
            runtime._state.ingest(NodeMessage(name, decode_line(line), t0 + k))
        out.append(runtime.tick(t0 + k + 0.5))
    return out
