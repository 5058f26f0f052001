"""Simulated nodes for bench/bench_fleet.py, in their own process: one asyncssh listener.

Every client connection is one node. Any exec request starts a canned agent session on
that channel: a protocol v1 ``hello`` (8 GPUs with 18 NVLinks, 8 IB ports, 1 NIC) and
then a ``sample`` per interval whose every value moves each tick (utilization, power,
clocks, temperatures, traffic counters), with ``slow``, ``links`` and ``hw`` (every
port's mlx5 hw_counters) every tenth tick, as the real agent sends them
(collectors/agent). ``t`` is the time the line was written, so the controller's
snapshot can be compared with it (sample -> snapshot latency).

All nodes are driven by one task in 20 staggered slots per interval (real nodes are not
in phase), so the simulator stays cheap. Prints one JSON line (port, key paths) once
listening; when stdin closes prints a JSON line with samples sent per whole second.

Each line goes out as one SSH packet, as OpenSSH's sshd sends an agent's line
(testkit.loopback.as_openssh; ``--framing asyncssh`` puts asyncssh's ignore message
back in front of every packet, as the benches before 2026-11-23 measured).

    python bench/lib/fleet_nodes.py --workdir DIR [--gpus 8] [--ports 8] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path

import asyncssh
import msgspec

sys.path.append(str(Path(__file__).resolve().parents[2]))  # PYTHONPATH first

from collectors.agent.fields import (
    GPU_FIELDS,
    GPU_SLOW_FIELDS,
    NIC_FIELDS,
    PORT_FIELDS,
    PROTOCOL_VERSION,
)
from collectors.protocol import GpuInfo, Hello, PortInfo, Sample
from collectors.sim.sysfs import HW_COUNTERS
from testkit.loopback.as_openssh import frame_as_openssh

SLOTS = 20
NVLINKS = 18
_encoder = msgspec.json.Encoder()


class CannedNode:
    """One simulated node's session: its hello and a fresh sample per tick."""

    def __init__(self, k: int, gpus: int, ports: int, interval: float) -> None:
        self.k = k
        self.gpus = gpus
        self.ports = ports
        self.interval = interval
        self.seq = 0
        self.base = 1_000_003 * k  # counters start somewhere different per node

    def hello(self, t: float) -> bytes:
        name = f"sim-{self.k:05d}"
        hello = Hello(
            v=PROTOCOL_VERSION, t=t, agent="bench-canned", host=name,
            interval=self.interval, slow_interval=self.interval * 10,
            gpu_fields=list(GPU_FIELDS), gpu_slow_fields=list(GPU_SLOW_FIELDS),
            port_fields=list(PORT_FIELDS), nic_fields=list(NIC_FIELDS),
            gpus=[
                GpuInfo(index=i, uuid=f"GPU-{name}-{i:02d}", name="NVIDIA H100 80GB HBM3",
                        serial=f"16523{self.k:05d}{i}", pci_bus_id=f"00000000:{0x18 + i:02X}:00.0",
                        memory_total_bytes=80 << 30, power_limit_w=700.0, nvlinks=NVLINKS)
                for i in range(self.gpus)
            ],
            ports=[PortInfo(name=f"mlx5_{i}/1", kind="ib", link_layer="InfiniBand")
                   for i in range(self.ports)],
            nics=[PortInfo(name="eth0", kind="eth", link_layer="Ethernet")],
            driver="550.54.15", cuda="12.4",
        )  # fmt: skip
        return _encoder.encode(hello) + b"\n"

    def sample(self, t: float) -> bytes:
        self.seq = n = self.seq + 1
        k = self.k
        gpus: list[list[int | float | None] | None] = []
        for g in range(self.gpus):
            u = (n * 7 + g * 13 + k) % 101
            gpus.append([u, (u * 3) % 101, u * 0.9, u * 0.4, 40_000 + (n * 31 + g) % 30_000,
                         300.0 + (n * 17 + g * 5) % 400 / 1.0, 40 + (n + g) % 35,
                         1_400 + (n * 3 + g) % 580, 0, 0])  # fmt: skip
        traffic = self.base + n * 3_000_000_000
        ports = [
            [4, 5, 400.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (self.base + n * 1_009) % 4_000_000,
             traffic + p, traffic - p, n * 2_900_000 + p, n * 2_800_000 + p]
            for p in range(self.ports)
        ]  # fmt: skip
        nics = [[1, 100_000, 2, self.base + n * 9_000_000, self.base + n * 8_000_000,
                 0, 0, 0, 0, 0, 0, 0]]  # fmt: skip
        slow = links = hw = None
        if n % 10 == 1:
            # Every port's mlx5 hw_counters, as the real agent lists them each slow tick.
            hw = [
                {name: (self.base + n * (i + 1) * 37 + p) % 1_000_000
                 for i, name in enumerate(HW_COUNTERS)}
                for p in range(self.ports)
            ]  # fmt: skip
            slow = [[0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, n // 10, 0, NVLINKS, NVLINKS,
                     0, 0, 0, 0, 700.0] for _ in range(self.gpus)]  # fmt: skip
            links = [[[1, 0, 0, 0, 0] for _ in range(NVLINKS)] for _ in range(self.gpus)]
        message = Sample(v=PROTOCOL_VERSION, t=t, seq=n, gpus=gpus, ports=ports, nics=nics,
                         slow=slow, links=links, hw=hw)  # fmt: skip
        return _encoder.encode(message) + b"\n"


class Nodes:
    """Every open session, and the driver that writes their samples in staggered slots."""

    def __init__(self, gpus: int, ports: int, interval: float) -> None:
        self.gpus, self.ports, self.interval = gpus, ports, interval
        self.slots: list[list[tuple[CannedNode, asyncssh.SSHServerProcess[bytes]]]] = [
            [] for _ in range(SLOTS)
        ]
        self.joined = 0
        self.sent: Counter[int] = Counter()

    async def session(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        node = CannedNode(self.joined, self.gpus, self.ports, self.interval)
        self.joined += 1
        process.stdout.write(node.hello(time.time()))
        entry = (node, process)
        slot = self.slots[node.k % SLOTS]
        slot.append(entry)
        try:
            await process.wait_closed()
        finally:
            slot.remove(entry)

    async def drive(self) -> None:
        loop = asyncio.get_running_loop()
        step = self.interval / SLOTS
        next_at = loop.time()
        i = 0
        while True:
            now = time.time()
            written = 0
            for node, process in tuple(self.slots[i % SLOTS]):
                if process.is_closing():
                    continue
                try:
                    process.stdout.write(node.sample(now))
                except (OSError, asyncssh.Error):
                    continue
                written += 1
            self.sent[int(now)] += written
            i += 1
            next_at += step
            await asyncio.sleep(max(0.0, next_at - loop.time()))


class _Server(asyncssh.SSHServer):
    def __init__(self, client_key: asyncssh.SSHKey) -> None:
        self._client_key = client_key

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._client_key.public_data


async def serve(workdir: Path, gpus: int, ports: int, interval: float) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = workdir / "client_key"
    client_key.write_private_key(str(key_path))
    key_path.chmod(0o600)
    nodes = Nodes(gpus, ports, interval)
    options = asyncssh.SSHServerConnectionOptions(
        server_host_keys=[host_key], encoding=None, keepalive_interval=30
    )
    acceptor = await asyncssh.listen(
        "127.0.0.1",
        0,
        backlog=1024,
        options=options,
        server_factory=lambda: _Server(client_key),
        process_factory=nodes.session,
    )
    driver = asyncio.create_task(nodes.drive())
    public = host_key.export_public_key("openssh").decode().strip()
    announce = {"port": acceptor.get_port(), "client_key": str(key_path), "host_key": public}
    print(json.dumps(announce), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    driver.cancel()
    acceptor.close()
    print(json.dumps({"sent": {str(k): v for k, v in sorted(nodes.sent.items())}}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ports", type=int, default=8)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--framing", choices=("openssh", "asyncssh"), default="openssh")
    args = parser.parse_args()
    if args.framing == "openssh":
        frame_as_openssh()
    asyncio.run(serve(args.workdir, args.gpus, args.ports, args.interval))


if __name__ == "__main__":
    main()
