"""Deterministic randomness and the identity of simulated GPUs.

Everything random in the simulator comes from :func:`mix`, a stateless hash of
integers and strings, so a value depends only on (seed, node, GPU, time) and two runs
with the same seed agree byte for byte. Python's ``hash()`` is salted per process, so
it is never used here.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

_MASK64 = (1 << 64) - 1
MODEL = "NVIDIA H100 80GB HBM3"
PCI_DEVICE_ID = 0x233010DE  # H100 SXM5
PCI_SUBSYSTEM_ID = 0x16C110DE
# Bus numbers of the eight GPUs on a typical HGX H100 board.
PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def _key(*parts: object) -> int:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int(struct.unpack("<Q", digest)[0])


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def stream_key(*parts: object) -> int:
    """A 64-bit key for a named random stream, e.g. ``stream_key(seed, node, gpu)``."""
    return _key(*parts)


def mix(key: int, *ints: int) -> float:
    """A uniform float in [0, 1) from a stream key and integer coordinates."""
    x = key
    for value in ints:
        x = _splitmix(x ^ (value & _MASK64))
    return _splitmix(x) / float(1 << 64)


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """What NVML reports as a GPU's identity."""

    uuid: str
    serial: str
    bus: int

    @property
    def bus_id(self) -> str:
        """PCI bus id in NVML's 8-digit-domain form, e.g. ``00000000:18:00.0``."""
        return f"00000000:{self.bus:02X}:00.0"

    @property
    def bus_id_legacy(self) -> str:
        """PCI bus id with the legacy 4-digit domain."""
        return f"0000:{self.bus:02X}:00.0"


def gpu_identity(seed: int, node: str, index: int, generation: int = 0) -> GpuIdentity:
    """The identity of GPU ``index`` on ``node``; a new ``generation`` is a swapped board."""
    key = stream_key("identity", seed, node, index, generation)
    hexdigits = f"{_splitmix(key):016x}{_splitmix(key ^ 1):016x}"
    uuid = (
        f"GPU-{hexdigits[0:8]}-{hexdigits[8:12]}-{hexdigits[12:16]}"
        f"-{hexdigits[16:20]}-{hexdigits[20:32]}"
    )
    serial = f"1654{_splitmix(key ^ 2) % 10**9:09d}"
    return GpuIdentity(uuid=uuid, serial=serial, bus=PCI_BUSES[index % len(PCI_BUSES)] + index // 8)


def boot_id(seed: int, node: str, boots: int) -> str:
    """The kernel's boot id after ``boots`` reboots (``/proc/sys/kernel/random/boot_id``)."""
    key = stream_key("boot", seed, node, boots)
    h = f"{_splitmix(key):016x}{_splitmix(key ^ 1):016x}"
    return f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:32]}"


def machine_id(seed: int, node: str, generation: int) -> str:
    """systemd's machine id (``/etc/machine-id``) of the ``generation``-th machine."""
    key = stream_key("machine", seed, node, generation)
    return f"{_splitmix(key):016x}{_splitmix(key ^ 1):016x}"
