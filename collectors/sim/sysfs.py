"""A fake ``/sys`` tree for InfiniBand HCAs and one Ethernet NIC.

:func:`render_tree` gives every file's text at a simulated time; :class:`SysfsWriter`
puts the changes on disk with an atomic replace (write a temp file outside
``class/``, then ``os.replace``), so a reader never sees a half-written counter or a
stray temp file in a directory it lists.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from collectors.agent.fields import IB_PHYS_STATES, IB_PORT_STATES, PORT_COUNTER_BITS
from collectors.sim.effects import NodeFaults, PortFaultState
from collectors.sim.identity import mix, stream_key

HCAS = 8
NIC = "eth0"
NOMINAL_RATE = "400 Gb/sec (4X NDR)"
LINK_BYTES_PER_S = 50e9  # 400 Gb/s
HW_COUNTERS = (
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "implied_nak_seq_err",
    "duplicate_request",
    "rnr_nak_retry_err",
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "rp_cnp_ignored",
    "req_cqe_error",
    "resp_cqe_error",
)
NIC_STATISTICS = (
    "rx_bytes",
    "tx_bytes",
    "rx_packets",
    "tx_packets",
    "rx_errors",
    "rx_crc_errors",
    "rx_dropped",
    "rx_missed_errors",
    "rx_fifo_errors",
    "rx_frame_errors",
    "rx_length_errors",
    "tx_errors",
    "tx_dropped",
    "tx_carrier_errors",
)


def clamp(name: str, count: int) -> int:
    """A PMA counter as the HCA reports it: pegged at all ones, never wrapped."""
    bits = PORT_COUNTER_BITS.get(name, 64)
    return min(count, (1 << bits) - 1)


def traffic_bytes(key: int, t: float, share: float) -> float:
    """Bytes moved by ``t``: the closed-form integral of a smooth, seeded rate.

    The rate is ``share * LINK_BYTES_PER_S * (0.55 + 0.35 sin(w t + phase))``, always
    positive, so the count only grows and any instant can be computed directly.
    """
    period = 300 + 600 * mix(key, 1)
    phase = 2 * math.pi * mix(key, 2)
    w = 2 * math.pi / period
    wave = (math.cos(phase) - math.cos(w * t + phase)) / w
    return share * LINK_BYTES_PER_S * (0.55 * t + 0.35 * wave)


def merge_intervals(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, non-overlapping union of ``(start, end)`` intervals."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def link_traffic(key: int, t: float, share: float, down: list[tuple[float, float]]) -> int:
    """Bytes moved by ``t`` on a link that carried nothing during the ``down`` intervals.

    Whole bytes throughout, so the count is exactly flat while the link is down and
    never steps back by a rounding error when it comes up.
    """

    def moved(at: float) -> int:
        return math.floor(traffic_bytes(key, at, share))

    return moved(t) - sum(moved(end) - moved(start) for start, end in down)


def _port_counters(key: int, t: float, fault: PortFaultState) -> dict[str, int]:
    boot = math.floor(1e12 + 1e14 * mix(key, 3))  # traffic since the HCA came up
    down = merge_intervals(fault.down_intervals)  # two faults may hold the link down at once
    tx = boot + link_traffic(key ^ 0x11, t, 0.45, down)
    rx = boot + boot // 100 + link_traffic(key ^ 0x22, t, 0.45, down)
    down_s = sum(end - start for start, end in down)
    counts = {
        "symbol_error": math.floor(4 * mix(key, 4)) + fault.symbol_error,
        "link_error_recovery": fault.link_error_recovery,
        "link_downed": fault.link_downed,
        "port_rcv_errors": fault.port_rcv_errors,
        "port_rcv_remote_physical_errors": 0,
        "port_rcv_switch_relay_errors": 0,
        # Packets queued for a down port are dropped: ~50 a second while it is down.
        "port_xmit_discards": math.floor(20 * mix(key, 5) + 50 * down_s),
        "port_xmit_constraint_errors": 0,
        "port_rcv_constraint_errors": 0,
        "local_link_integrity_errors": 0,
        "excessive_buffer_overrun_errors": 0,
        "VL15_dropped": 0,
        "port_xmit_wait": math.floor(2e9 * mix(key, 6) + 40_000 * t),
        "port_xmit_data": tx // 4,  # octets / 4, as the PMA counts
        "port_rcv_data": rx // 4,
        "port_xmit_packets": tx // 3800,
        "port_rcv_packets": rx // 3800,
        "unicast_xmit_packets": tx // 3800,
        "unicast_rcv_packets": rx // 3800,
        "multicast_xmit_packets": math.floor(t / 10),
        "multicast_rcv_packets": math.floor(t / 10),
    }
    return {name: clamp(name, max(0, count)) for name, count in counts.items()}


def _port_files(hca: int, key: int, t: float, fault: PortFaultState) -> dict[str, str]:
    base = f"class/infiniband/mlx5_{hca}"
    port = f"{base}/ports/1"
    files = {
        f"{base}/hca_type": "MT4129",
        f"{base}/fw_ver": "28.43.1014",
        f"{base}/node_guid": f"a088:c203:00{hca:02x}:{key & 0xFFFF:04x}",
        f"{port}/state": f"{fault.state}: {IB_PORT_STATES[fault.state]}",
        f"{port}/phys_state": f"{fault.phys_state}: {IB_PHYS_STATES[fault.phys_state]}",
        f"{port}/rate": fault.rate or NOMINAL_RATE,
        f"{port}/link_layer": "InfiniBand",
        f"{port}/lid": f"0x{(key % 0xBFFF) + 1:x}",
    }
    for name, count in _port_counters(key, t, fault).items():
        files[f"{port}/counters/{name}"] = str(count)
    for i, name in enumerate(HW_COUNTERS):
        rising = name in ("np_cnp_sent", "rp_cnp_handled", "out_of_sequence")
        count = math.floor(t * 3 * mix(key, 20 + i)) if rising else math.floor(3 * mix(key, 40 + i))
        files[f"{port}/hw_counters/{name}"] = str(count)
    return files


def _nic_files(key: int, t: float) -> dict[str, str]:
    base = f"class/net/{NIC}"
    rx = 4e11 * mix(key, 1) + traffic_bytes(key ^ 0x33, t, 0.002)
    tx = 3e11 * mix(key, 2) + traffic_bytes(key ^ 0x44, t, 0.001)
    stats = dict.fromkeys(NIC_STATISTICS, 0)
    stats.update(
        rx_bytes=math.floor(rx),
        tx_bytes=math.floor(tx),
        rx_packets=math.floor(rx / 1200),
        tx_packets=math.floor(tx / 1200),
        rx_dropped=math.floor(200 * mix(key, 3) + t / 60),
    )
    files = {
        f"{base}/operstate": "up",
        f"{base}/speed": "100000",
        f"{base}/carrier_changes": "2",
        f"{base}/carrier_up_count": "1",
        f"{base}/carrier_down_count": "1",
    }
    files.update({f"{base}/statistics/{name}": str(n) for name, n in stats.items()})
    return files


def render_tree(seed: int, faults: NodeFaults, t: float) -> dict[str, str]:
    """Relative path -> file text for every simulated sysfs file at time ``t``."""
    files: dict[str, str] = {}
    for hca in range(HCAS):
        key = stream_key("port", seed, faults.node, hca)
        files.update(_port_files(hca, key, t, faults.port_state(hca, t)))
    files.update(_nic_files(stream_key("nic", seed, faults.node), t))
    return {path: text + "\n" for path, text in files.items()}


class SysfsWriter:
    """Keeps a directory in step with :func:`render_tree`, writing only what changed."""

    def __init__(self, root: Path, seed: int, faults: NodeFaults) -> None:
        self.root = root
        self._seed = seed
        self._faults = faults
        self._written: dict[str, str] = {}
        self._tmp = root / ".sim-tmp"
        self._tmp.mkdir(parents=True, exist_ok=True)

    def write(self, t: float) -> int:
        """Bring the tree to time ``t``; returns how many files changed."""
        changed = 0
        root, staging = str(self.root), str(self._tmp / "staging")
        for path, text in render_tree(self._seed, self._faults, t).items():
            if self._written.get(path) == text:
                continue
            target = f"{root}/{path}"
            if path not in self._written:
                os.makedirs(os.path.dirname(target), exist_ok=True)
            # Plain os calls: this runs ~70 times per tick per node, pathlib costs a third.
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
            os.replace(staging, target)
            self._written[path] = text
            changed += 1
        return changed
