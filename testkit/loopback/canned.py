"""Protocol v1 lines made up on the spot, for loopback nodes that run no agent process."""

from __future__ import annotations

import msgspec

from collectors.agent.fields import (
    GPU_FIELDS,
    GPU_SLOW_FIELDS,
    NIC_FIELDS,
    PORT_FIELDS,
    PROTOCOL_VERSION,
)
from collectors.protocol import GpuInfo, Hello, PortInfo, Sample

_encoder = msgspec.json.Encoder()


def hello_line(node: str, gpus: int, t: float, interval: float = 1.0, ports: int = 8) -> bytes:
    """A ``hello`` from a made-up node with ``gpus`` H100s and ``ports`` IB ports."""
    hello = Hello(
        v=PROTOCOL_VERSION,
        t=t,
        agent="canned",
        host=node,
        interval=interval,
        slow_interval=interval * 10,
        gpu_fields=list(GPU_FIELDS),
        gpu_slow_fields=list(GPU_SLOW_FIELDS),
        port_fields=list(PORT_FIELDS),
        nic_fields=list(NIC_FIELDS),
        gpus=[
            GpuInfo(
                index=i,
                uuid=f"GPU-{node}-{i:02d}",
                name="NVIDIA H100 80GB HBM3",
                memory_total_bytes=80 << 30,
                power_limit_w=700.0,
            )
            for i in range(gpus)
        ],
        ports=[
            PortInfo(name=f"mlx5_{i}/1", kind="ib", link_layer="InfiniBand") for i in range(ports)
        ],
        driver="550.54.15",
        cuda="12.4",
    )
    return _encoder.encode(hello) + b"\n"


class SampleMaker:
    """Builds one node's ``sample`` lines; values are fixed, ``t`` and ``seq`` advance."""

    def __init__(self, gpus: int, ports: int = 8) -> None:
        self._gpus: tuple[tuple[int | float | None, ...] | None, ...] = tuple(
            (87, 41, 72.5, 30.1, 61000, 512.3, 64, 1980, 0, 0) for _ in range(gpus)
        )
        self._ports: tuple[tuple[int | float | None, ...], ...] = tuple(
            (4, 5, 400.0, *([0] * (len(PORT_FIELDS) - 3))) for _ in range(ports)
        )
        self.seq = 0

    def line(self, t: float) -> bytes:
        """The next sample, stamped ``t``."""
        self.seq += 1
        sample = Sample(v=PROTOCOL_VERSION, t=t, seq=self.seq, gpus=self._gpus, ports=self._ports)
        return _encoder.encode(sample) + b"\n"
