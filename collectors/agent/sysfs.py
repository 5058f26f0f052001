"""InfiniBand / RoCE / EFA ports and Ethernet NICs, read from sysfs.

The root is configurable so tests and the simulated node point it at a fake tree.
Every read tolerates a missing or unparsable file: that value is null, the agent
goes on. Counters are sent raw; the controller handles clamping and resets.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Dict, List, Optional, Tuple

from collectors.agent.fields import DATA_COUNTERS, NIC_FIELDS, PORT_FIELDS

# PORT_FIELDS without the three parsed attributes: the rest are files under counters/.
_PORT_COUNTERS = PORT_FIELDS[3:]
# Kernels before 4.5 (and MLNX_OFED of that era) also serve 64-bit PortCountersExtended
# values in a separate counters_ext/ directory, under these names (as read by
# prometheus/procfs, sysfs/class_infiniband.go). counters/ stays the port's own reading,
# as node_exporter reports it: on mlx4, counters_ext/ of the second port repeats the
# first port's values and its packet counters read 0 while counters/ counts (node_exporter
# fixture sys.ttar, mlx4_0). counters_ext/ therefore only fills a counter that counters/
# does not serve, or one whose 32-bit counters/ value is pegged at 2^32 - 1.
_LEGACY_EXT = {
    "port_xmit_data": "port_xmit_data_64",
    "port_rcv_data": "port_rcv_data_64",
    "port_xmit_packets": "port_xmit_packets_64",
    "port_rcv_packets": "port_rcv_packets_64",
    "unicast_xmit_packets": "port_unicast_xmit_packets",
    "unicast_rcv_packets": "port_unicast_rcv_packets",
    "multicast_xmit_packets": "port_multicast_xmit_packets",
    "multicast_rcv_packets": "port_multicast_rcv_packets",
}
_MAX_32 = (1 << 32) - 1
# NIC_FIELDS after up/speed/carrier_changes live under statistics/.
_NIC_STATISTICS = NIC_FIELDS[3:]
# class/net/<if>/type of an IPoIB interface (ARPHRD_INFINIBAND); Ethernet is "1".
_ARPHRD_INFINIBAND = "32"
# Open attribute files kept at most; beyond that, files are opened per read.
MAX_OPEN_FILES = 512


def read_text(path: str) -> Optional[str]:
    """The stripped content of a sysfs file, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as handle:
            return handle.read(256).decode("ascii", "replace").strip()
    except OSError:
        # Missing file, vanished device, or EINVAL (e.g. speed of a down link).
        return None


def _to_int(text: Optional[str]) -> Optional[int]:
    if not text:
        return None
    try:
        return int(text, 0) if text.startswith("0x") else int(text)
    except ValueError:
        return None


def read_int(path: str) -> Optional[int]:
    """A sysfs integer (decimal, or hex with 0x), or None."""
    return _to_int(read_text(path))


def is_sysfs_mount(root: str) -> bool:
    """True when ``root`` lies on a mounted sysfs (per /proc/mounts), not a plain tree."""
    target = os.path.realpath(root)
    best, kind = "", ""
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1]
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) > len(best):
                    best, kind = point, parts[2]
    except OSError:
        return False
    return kind == "sysfs"


class AttributeReader:
    """Reads small attribute files, keeping them open on a real sysfs.

    A sysfs attribute regenerates its value on every read at offset 0, so one
    ``os.pread`` on a cached descriptor replaces open/read/close (about 1 us
    against 13 us in Python). A plain tree (the simulator's, a test's) may replace
    its files by rename, so there each read opens the file afresh.
    """

    def __init__(self, keep_open: bool) -> None:
        self.keep_open = keep_open
        self._fds: Dict[str, int] = {}

    def text(self, path: str) -> Optional[str]:
        """The stripped content of one attribute, or None."""
        if not self.keep_open:
            return read_text(path)
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= MAX_OPEN_FILES:
                return read_text(path)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                return None
            self._fds[path] = fd
        try:
            data = os.pread(fd, 256, 0)
        except OSError as exc:
            if exc.errno in (errno.ENODEV, errno.EBADF, errno.ENOENT):
                self._drop(path)  # the device went away: reopen if it comes back
            return None  # EINVAL: e.g. the speed of a link that is down
        return data.decode("ascii", "replace").strip()

    def integer(self, path: str) -> Optional[int]:
        """One attribute as an integer, or None."""
        return _to_int(self.text(path))

    def _drop(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Close every cached descriptor."""
        for path in list(self._fds):
            self._drop(path)


def parse_code(text: Optional[str]) -> Optional[int]:
    """``"4: ACTIVE"`` -> 4 (IB ``state`` and ``phys_state`` files)."""
    if not text:
        return None
    head = text.split(":", 1)[0].strip()
    return int(head) if head.isdigit() else None


def parse_rate(text: Optional[str]) -> Optional[float]:
    """``"400 Gb/sec (4X NDR)"`` -> 400.0; ``"2.5 Gb/sec (1X SDR)"`` -> 2.5."""
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


class IbPort:
    """One HCA port: ``<root>/class/infiniband/<dev>/ports/<n>``."""

    def __init__(self, device: str, number: str, path: str, reader: AttributeReader) -> None:
        self.name = device + "/" + number
        self.path = path
        self._reader = reader
        self.link_layer = read_text(os.path.join(path, "link_layer"))
        self.kind = _port_kind(device, self.link_layer)
        self.netdev = _port_netdev(path)
        self._state_paths = [os.path.join(path, name) for name in ("state", "phys_state", "rate")]
        self._counter_paths = _counter_paths(path)
        self.data_bits = _data_bits(path)
        self._hw_dir = os.path.join(path, "hw_counters")

    def info(self) -> Dict[str, Any]:
        """The ``PortInfo`` entry of ``hello``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "link_layer": self.link_layer,
            "netdev": self.netdev,
            "data_bits": self.data_bits,
        }

    def read(self) -> List[Any]:
        """Values in PORT_FIELDS order."""
        text = self._reader.text
        state, phys_state, rate = self._state_paths
        values: List[Any] = [
            parse_code(text(state)),
            parse_code(text(phys_state)),
            parse_rate(text(rate)),
        ]
        integer = self._reader.integer
        for own, extended in self._counter_paths:
            value = integer(own) if own else None
            if extended and (value is None or value == _MAX_32):
                value = integer(extended)
            values.append(value)
        return values

    def read_hw(self) -> Dict[str, int]:
        """Driver hw_counters (mlx5, EFA) by name; listed on every slow tick."""
        try:
            names = sorted(os.listdir(self._hw_dir))
        except OSError:
            return {}
        counters = {}
        for name in names:
            value = self._reader.integer(os.path.join(self._hw_dir, name))
            if value is not None:
                counters[name] = value
        return counters


def _counter_paths(path: str) -> List[Tuple[str, str]]:
    """Per counter of PORT_FIELDS: its counters/ file and its counters_ext/ file.

    Where a port has counters_ext/, a counters/ file it lacks is "" (not tried each tick)
    and so is a counters_ext/ file it lacks; without counters_ext/ every counters/ path is
    kept, as a counter may appear later (a driver loaded after the agent started).
    """
    counters, legacy = os.path.join(path, "counters"), os.path.join(path, "counters_ext")
    has_legacy = os.path.isdir(legacy)
    paths = []
    for name in _PORT_COUNTERS:
        own = os.path.join(counters, name)
        ext = _LEGACY_EXT.get(name)
        ext_path = os.path.join(legacy, ext) if ext and has_legacy else ""
        if ext_path and not os.path.isfile(ext_path):
            ext_path = ""
        if ext_path and not os.path.isfile(own):
            own = ""
        paths.append((own, ext_path))
    return paths


def _data_bits(path: str) -> Optional[int]:
    """The width of the port's data and packet counters (None: it has none).

    The kernel serves 64-bit ones where the HCA's PMA has extended counters (then
    counters/ also has unicast_xmit_packets, or a pre-4.5 kernel has counters_ext/),
    else 32-bit ones (kernel drivers/infiniband/core/sysfs.c, get_counter_table). A
    port with extended width but not the IETF counters looks like the 32-bit case: a
    value above 2^32 - 1 gives it away; otherwise 32 is assumed.
    """
    counters = os.path.join(path, "counters")
    if os.path.isfile(os.path.join(path, "counters_ext", "port_xmit_data_64")):
        return 64
    if os.path.isfile(os.path.join(counters, "unicast_xmit_packets")):
        return 64
    values = [read_int(os.path.join(counters, name)) for name in DATA_COUNTERS]
    if all(value is None for value in values):
        return None  # no PMA data counters (e.g. EFA: hw_counters only)
    return 64 if any(value is not None and value > _MAX_32 for value in values) else 32


def _port_kind(device: str, link_layer: Optional[str]) -> str:
    if device.startswith("efa"):
        return "efa"
    if link_layer == "Ethernet":
        return "roce"
    return "ib"


def _port_netdev(path: str) -> Optional[str]:
    """The Ethernet device behind a RoCE port, if sysfs says."""
    ndev = read_text(os.path.join(path, "gid_attrs", "ndevs", "0"))
    if ndev:
        return ndev
    try:
        names = sorted(os.listdir(os.path.join(path, "..", "..", "device", "net")))
    except OSError:
        return None
    return names[0] if names else None


class Nic:
    """One Ethernet interface: ``<root>/class/net/<if>``."""

    def __init__(self, name: str, path: str, reader: AttributeReader) -> None:
        self.name = name
        self.path = path
        self._reader = reader
        self._operstate = os.path.join(path, "operstate")
        self._speed = os.path.join(path, "speed")
        self._carrier_changes = os.path.join(path, "carrier_changes")
        stats = os.path.join(path, "statistics")
        self._stat_paths = [os.path.join(stats, s) for s in _NIC_STATISTICS]

    def info(self) -> Dict[str, Any]:
        """The ``PortInfo`` entry of ``hello`` (kind ``eth``)."""
        return {"name": self.name, "kind": "eth", "link_layer": "Ethernet", "netdev": self.name}

    def read(self) -> List[Any]:
        """Values in NIC_FIELDS order."""
        integer = self._reader.integer
        operstate = self._reader.text(self._operstate)
        speed = integer(self._speed)
        values: List[Any] = [
            None if operstate is None else int(operstate == "up"),
            speed if speed is not None and speed >= 0 else None,
            integer(self._carrier_changes),
        ]
        values.extend(integer(stat) for stat in self._stat_paths)
        return values


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def discover_ports(sysfs_root: str, reader: Optional[AttributeReader] = None) -> List[IbPort]:
    """Every HCA port under ``<root>/class/infiniband``, in a stable order."""
    reader = reader or AttributeReader(keep_open=False)
    base = os.path.join(sysfs_root, "class", "infiniband")
    ports = []
    for device in _listdir(base):
        ports_dir = os.path.join(base, device, "ports")
        for number in _listdir(ports_dir):
            ports.append(IbPort(device, number, os.path.join(ports_dir, number), reader))
    return ports


def discover_nics(sysfs_root: str, reader: Optional[AttributeReader] = None) -> List[Nic]:
    """Ethernet interfaces under ``<root>/class/net``, without loopback or virtual ones."""
    reader = reader or AttributeReader(keep_open=False)
    base = os.path.join(sysfs_root, "class", "net")
    nics = []
    for name in _listdir(base):
        path = os.path.join(base, name)
        if not os.path.isdir(path):
            continue  # bonding_masters and other plain files beside the interfaces
        # On a real node class/net/<if> links into /sys/devices; veth, docker0 and
        # bridges live under devices/virtual and say nothing about the fabric.
        if name == "lo" or "/devices/virtual/" in os.path.realpath(path):
            continue
        if read_text(os.path.join(path, "type")) == _ARPHRD_INFINIBAND:
            continue  # IPoIB (ib0): its traffic is already counted on the HCA port
        nics.append(Nic(name, path, reader))
    return nics
