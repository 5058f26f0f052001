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

Events come at a real fleet's rates, not only samples: an ``event`` line (an
application XID: 13, 31 or 43, the kinds a busy fleet logs most) at
``--xids-per-node-hour`` per node (drawn per tick, so some nodes send two in a row and
most none in a window), and a ``jobs`` message per node every ``--jobs-every`` seconds
(the agent's refresh period, collectors/agent/jobs.py), staggered across nodes.

Each line goes out as one SSH packet, as OpenSSH's sshd sends an agent's line when it
reads the line whole (testkit.loopback.as_openssh). ``--framing split`` writes every
line in 2 to 4 pieces cut at points drawn per line, as sshd sends it when it reads the
agent's pipe mid-line (a slow tick's ~6 KB line spans more than one pipe read);
``--framing asyncssh`` puts asyncssh's ignore message back in front of every packet,
as the benches before 2026-11-23 measured.

    python bench/lib/fleet_nodes.py --workdir DIR [--gpus 8] [--ports 8] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
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
from collectors.protocol import (
    JOBS_SCHEMA,
    Event,
    GpuInfo,
    Hello,
    JobOnGpu,
    Jobs,
    PortInfo,
    Sample,
)
from collectors.sim.sysfs import HW_COUNTERS
from testkit.loopback.as_openssh import frame_as_openssh

SLOTS = 20
NVLINKS = 18
FRAMINGS = ("openssh", "split", "asyncssh")
APPLICATION_XIDS = (13, 31, 43)  # graphics engine exception, MMU fault, channel reset
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

    def event(self, t: float, draw: float) -> bytes:
        """An application XID on one of the node's GPUs (``draw`` in [0, 1) picks which)."""
        gpu = int(draw * self.gpus)
        code = APPLICATION_XIDS[int(draw * 997) % len(APPLICATION_XIDS)]
        message = Event(v=PROTOCOL_VERSION, t=t, kind="xid", gpu=gpu,
                        uuid=f"GPU-sim-{self.k:05d}-{gpu:02d}", code=code,
                        detail=f"Xid (PCI:0000:{0x18 + gpu:02x}:00): {code}, pid=4242")  # fmt: skip
        return _encoder.encode(message) + b"\n"

    def jobs(self, t: float) -> bytes:
        """Which Slurm job holds each GPU: one job per node, changing every 100 ticks."""
        job = str(100_000 + self.k * 1_000 + self.seq // 100)
        entries = [JobOnGpu(gpu=g, uuid=f"GPU-sim-{self.k:05d}-{g:02d}", scheduler="slurm",
                            job=job, step="0", uid=10_000 + self.k % 500,
                            user=f"user{self.k % 500:03d}", processes=1)
                   for g in range(self.gpus)]  # fmt: skip
        message = Jobs(v=PROTOCOL_VERSION, t=t, schema=JOBS_SCHEMA, jobs=entries)
        return _encoder.encode(message) + b"\n"

    def sample(self, t: float) -> bytes:
        self.seq = n = self.seq + 1
        k = self.k
        gpus: list[tuple[int | float | None, ...] | None] = []
        for g in range(self.gpus):
            u = (n * 7 + g * 13 + k) % 101
            gpus.append((u, (u * 3) % 101, u * 0.9, u * 0.4, 40_000 + (n * 31 + g) % 30_000,
                         300.0 + (n * 17 + g * 5) % 400 / 1.0, 40 + (n + g) % 35,
                         1_400 + (n * 3 + g) % 580, 0, 0))  # fmt: skip
        traffic = self.base + n * 3_000_000_000
        ports: list[tuple[int | float | None, ...]] = [
            (4, 5, 400.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (self.base + n * 1_009) % 4_000_000,
             traffic + p, traffic - p, n * 2_900_000 + p, n * 2_800_000 + p)
            for p in range(self.ports)
        ]  # fmt: skip
        nic = (1, 100_000, 2, self.base + n * 9_000_000, self.base + n * 8_000_000,
               0, 0, 0, 0, 0, 0, 0)  # fmt: skip
        nics: list[tuple[int | float | None, ...]] = [nic]
        slow: list[tuple[int | float | None, ...] | None] | None = None
        links: list[tuple[tuple[int | float | None, ...], ...] | None] | None = None
        hw = None
        if n % 10 == 1:
            # Every port's mlx5 hw_counters, as the real agent lists them each slow tick.
            hw = [
                {name: (self.base + n * (i + 1) * 37 + p) % 1_000_000
                 for i, name in enumerate(HW_COUNTERS)}
                for p in range(self.ports)
            ]  # fmt: skip
            slow = [(0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, n // 10, 0, NVLINKS, NVLINKS,
                     0, 0, 0, 0, 700.0, 4, 4, 16, 16, n * 700_000, None, None, None,
                     2_619, 45, 700.0, 1, 0) for _ in range(self.gpus)]  # fmt: skip
            links = [tuple((1, 0, 0, 0, 0) for _ in range(NVLINKS)) for _ in range(self.gpus)]
        message = Sample(v=PROTOCOL_VERSION, t=t, seq=n, gpus=gpus, ports=ports, nics=nics,
                         slow=slow, links=links, hw=hw)  # fmt: skip
        return _encoder.encode(message) + b"\n"


class Nodes:
    """Every open session, and the driver that writes their lines in staggered slots."""

    def __init__(self, gpus: int, ports: int, interval: float, traffic: Traffic) -> None:
        self.gpus, self.ports, self.interval = gpus, ports, interval
        self.traffic = traffic
        self.slots: list[list[tuple[CannedNode, asyncssh.SSHServerProcess[bytes]]]] = [
            [] for _ in range(SLOTS)
        ]
        self.joined = 0
        self.sent: Counter[int] = Counter()  # samples per whole second
        self.extra: Counter[str] = Counter()  # events and jobs messages sent
        self.packets = 0

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

    def lines(self, node: CannedNode, now: float) -> list[bytes]:
        """What ``node`` writes this tick: its sample, and an event or jobs when due."""
        out = [node.sample(now)]
        traffic, draw = self.traffic, self.traffic.rng.random()
        if draw < traffic.xid_per_tick:
            out.append(node.event(now, draw / traffic.xid_per_tick))
            self.extra["event"] += 1
        if traffic.jobs_ticks and (node.seq + node.k) % traffic.jobs_ticks == 0:
            out.append(node.jobs(now))
            self.extra["jobs"] += 1
        return out

    async def drive(self) -> None:
        loop = asyncio.get_running_loop()
        step = self.interval / SLOTS
        next_at = loop.time()
        i = 0
        pieces = self.traffic.pieces
        while True:
            now = time.time()
            written = 0
            for node, process in tuple(self.slots[i % SLOTS]):
                if process.is_closing():
                    continue
                try:
                    for line in self.lines(node, now):
                        for piece in pieces(line):
                            process.stdout.write(piece)
                            self.packets += 1
                except (OSError, asyncssh.Error):
                    continue
                written += 1
            self.sent[int(now)] += written
            i += 1
            next_at += step
            await asyncio.sleep(max(0.0, next_at - loop.time()))


class Traffic:
    """How the nodes frame their lines and how often they send events."""

    def __init__(self, framing: str, xids_per_node_hour: float, jobs_every_s: float,
                 interval: float) -> None:  # fmt: skip
        self.rng = random.Random(20261129)  # the same draws in every run
        self.split = framing == "split"
        self.xid_per_tick = xids_per_node_hour * interval / 3600
        self.jobs_ticks = round(jobs_every_s / interval) if jobs_every_s > 0 else 0

    def pieces(self, line: bytes) -> list[bytes]:
        """``line`` as the packets it goes out in: whole, or cut at 1 to 3 drawn points."""
        if not self.split or len(line) < 8:
            return [line]
        cuts = sorted(self.rng.sample(range(1, len(line)), self.rng.randint(1, 3)))
        return [line[a:b] for a, b in itertools.pairwise([0, *cuts, len(line)])]


class _Server(asyncssh.SSHServer):
    def __init__(self, client_key: asyncssh.SSHKey) -> None:
        self._client_key = client_key

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._client_key.public_data


async def serve(workdir: Path, gpus: int, ports: int, interval: float, traffic: Traffic) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = workdir / "client_key"
    client_key.write_private_key(str(key_path))
    key_path.chmod(0o600)
    nodes = Nodes(gpus, ports, interval, traffic)
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
    sent = {str(k): v for k, v in sorted(nodes.sent.items())}
    print(json.dumps({"sent": sent, "extra": nodes.extra, "packets": nodes.packets}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ports", type=int, default=8)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--framing", choices=FRAMINGS, default="openssh")
    parser.add_argument("--xids-per-node-hour", type=float, default=1.0)
    parser.add_argument("--jobs-every", type=float, default=300.0, metavar="S")
    args = parser.parse_args()
    if args.framing != "asyncssh":
        frame_as_openssh()
    traffic = Traffic(args.framing, args.xids_per_node_hour, args.jobs_every, args.interval)
    asyncio.run(serve(args.workdir, args.gpus, args.ports, args.interval, traffic))


if __name__ == "__main__":
    main()
