"""A node feed: protocol v1 messages for one node, as its agent would send them.

Every message is built from the real protocol structs, encoded to a JSON line and
decoded again with ``collectors.protocol.decode_line``, so what FleetState sees is
exactly what the transport would hand it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from collectors.agent.fields import (
    GPU_FIELDS,
    GPU_SLOW_FIELDS,
    NIC_FIELDS,
    NVLINK_FIELDS,
    PORT_FIELDS,
    PROTOCOL_VERSION,
)
from collectors.protocol import (
    Bye,
    Error,
    Event,
    GpuInfo,
    Hello,
    Message,
    PortInfo,
    Sample,
    Value,
    decode_line,
)
from collectors.updates import NodeMessage, NodeStatus, NodeStatusChange
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec

V = PROTOCOL_VERSION


def fast_defaults() -> dict[str, Any]:
    return {
        "util_gpu": 50,
        "util_mem": 20,
        "sm_active": 40.0,
        "tensor_active": 10.0,
        "mem_used_mib": 1024,
        "power_w": 300.5,
        "temp_c": 55,
        "sm_clock_mhz": 1980,
        "clock_reasons": 0,
        "pstate": 0,
    }


def slow_defaults(nvlinks: int) -> dict[str, Any]:
    values: dict[str, Any] = dict.fromkeys(GPU_SLOW_FIELDS, 0)
    values.update(nvlink_active=nvlinks, nvlink_total=nvlinks, power_limit_w=700.0)
    return values


def port_defaults() -> dict[str, Any]:
    values: dict[str, Any] = dict.fromkeys(PORT_FIELDS, 0)
    values.update(state=4, phys_state=5, rate_gbps=400.0)
    return values


class NodeFeed:
    """Messages of one node. Mutate ``fast``, ``slow``, ``links`` and ``ports``, then send."""

    def __init__(
        self, name: str = "gpu-001", gpus: int = 8, ports: int = 2, nvlinks: int = 4
    ) -> None:
        self.name = name
        self.t = 1_000.0
        self.seq = 0
        self.interval = 1.0
        self.nvlinks = nvlinks
        self.uuids = [f"GPU-{name}-{i}" for i in range(gpus)]
        self.fast = [fast_defaults() for _ in range(gpus)]
        self.slow = [slow_defaults(nvlinks) for _ in range(gpus)]
        self.links: list[list[list[Value]]] = [
            [[1, 0, 0, 0, 0] for _ in range(nvlinks)] for _ in range(gpus)
        ]
        self.port_names = [f"mlx5_{i}/1" for i in range(ports)]
        self.ports = [port_defaults() for _ in range(ports)]
        self.lost: set[int] = set()
        self.errs: dict[str, dict[str, str]] = {}  # next sample's failed fields

    def _wrap(self, message: Message) -> NodeMessage:
        line = msgspec.json.encode(message)
        return NodeMessage(self.name, decode_line(line), self.t)

    def hello(self) -> NodeMessage:
        """``hello`` for the GPUs in ``uuids`` (change them to model a swap)."""
        gpus = [
            GpuInfo(i, uuid, "NVIDIA H100 80GB HBM3", nvlinks=self.nvlinks)
            for i, uuid in enumerate(self.uuids)
        ]
        ports = [PortInfo(name, "ib", "InfiniBand") for name in self.port_names]
        return self._wrap(
            Hello(
                v=V,
                t=self.t,
                agent="test",
                host=self.name,
                interval=self.interval,
                slow_interval=10.0,
                gpu_fields=list(GPU_FIELDS),
                gpu_slow_fields=list(GPU_SLOW_FIELDS),
                port_fields=list(PORT_FIELDS),
                nic_fields=list(NIC_FIELDS),
                gpus=gpus,
                ports=ports,
                driver="580.65",
            )
        )

    def sample(self, *, slow: bool = True, advance: float | None = None) -> NodeMessage:
        """One tick ``advance`` seconds (default: one interval) after the previous one."""
        self.t += self.interval if advance is None else advance
        self.seq += 1
        gpus = [
            None if i in self.lost else [f[name] for name in GPU_FIELDS]
            for i, f in enumerate(self.fast)
        ]
        slow_rows = [
            None if i in self.lost else [s[name] for name in GPU_SLOW_FIELDS]
            for i, s in enumerate(self.slow)
        ]
        links = [None if i in self.lost else links for i, links in enumerate(self.links)]
        return self._wrap(
            Sample(
                v=V,
                t=self.t,
                seq=self.seq,
                gpus=gpus,
                ports=[[p[name] for name in PORT_FIELDS] for p in self.ports],
                lost=sorted(self.lost),
                errs=self.errs,
                slow=slow_rows if slow else None,
                links=links if slow else None,
            )
        )

    def event(
        self, kind: str, gpu: int | None = None, code: int | None = None, detail: str = ""
    ) -> NodeMessage:
        uuid = self.uuids[gpu] if gpu is not None else None
        return self._wrap(Event(V, self.t, kind, gpu, uuid, code, detail))

    def error(self, code: str, message: str = "", fatal: bool = False) -> NodeMessage:
        return self._wrap(Error(V, self.t, code, message, None, fatal))

    def bye(self, reason: str = "") -> NodeMessage:
        return self._wrap(Bye(V, self.t, reason))

    def status(self, status: NodeStatus, reason: str = "") -> NodeStatusChange:
        return NodeStatusChange(self.name, status, reason, self.t)

    def add_link_crc(self, gpu: int, link: int, errors: int) -> None:
        """Add CRC flit errors on one link (and the GPU's totals, as the agent sums them)."""
        values = self.links[gpu][link]
        position = NVLINK_FIELDS.index("crc_flit")
        values[position] = int(values[position] or 0) + errors
        self.slow[gpu]["nvlink_crc_flit"] += errors


def start(state: FleetState, feed: NodeFeed, samples: int = 2) -> None:
    """Connect ``feed``'s node: status, hello, then a few healthy samples."""
    state.ingest(feed.status("streaming"))
    state.ingest(feed.hello())
    for _ in range(samples):
        state.ingest(feed.sample())


def started_fleet(*feeds: NodeFeed) -> FleetState:
    """A fleet of ``feeds``' nodes (each expecting its feed's GPUs), every one started."""
    state = FleetState([NodeSpec(f.name, len(f.uuids)) for f in feeds], HealthSection())
    for feed in feeds:
        start(state, feed)
    return state
