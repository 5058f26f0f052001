"""The agent reads sysfs trees laid out as real kernels lay them out.

Layouts (kernel ``drivers/infiniband/core/sysfs.c``; prometheus/procfs fixtures):

- mlx5 on a kernel >= 4.5 with extended PMA counters: ``counters/`` holds the 64-bit
  data counters and the unicast/multicast packet counters (``pma_group_ext``);
- mlx4 on a pre-4.5 kernel: ``counters/`` holds 32-bit data counters and the 64-bit
  ones live in ``counters_ext/`` (``port_xmit_data_64``, ``port_unicast_xmit_packets``);
- an HCA without the extended-width capability: ``counters/`` only, 32-bit data
  counters, no unicast/multicast files (``pma_group``);
- a RoCE bond: ``mlx5_bond_0`` over ``bond0``, a virtual interface, with the
  ``bonding_masters`` regular file in ``class/net``;
- EFA: no ``counters/`` at all, driver ``hw_counters`` only.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from collectors.agent.fields import NIC_FIELDS, PORT_FIELDS
from collectors.agent.sysfs import IbPort, discover_nics, discover_ports
from collectors.protocol import Hello
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start

PMA_ERRORS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_wait",
)
DATA = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")
CAST = ("unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets")
CAST += ("multicast_rcv_packets",)
MAX_32 = str((1 << 32) - 1)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def hca_port(root: Path, device: str, layer: str = "InfiniBand") -> Path:
    # As on a node: class/infiniband/<dev> links into the PCI device tree.
    real = root / "devices" / "pci0000:00" / f"0000:{abs(hash(device)) % 255:02x}:00.0"
    port = real / "infiniband" / device / "ports" / "1"
    write(port / "state", "4: ACTIVE")
    write(port / "phys_state", "5: LinkUp")
    write(port / "rate", "400 Gb/sec (4X NDR)")
    write(port / "link_layer", layer)
    link = root / "class" / "infiniband" / device
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(real / "infiniband" / device, link.parent), link)
    return port


def fill(port: Path, directory: str, names: tuple[str, ...], value: str) -> None:
    for name in names:
        write(port / directory / name, value)


def values_of(port: IbPort) -> dict[str, object]:
    return dict(zip(PORT_FIELDS, port.read(), strict=True))


def test_mlx5_extended_counters_are_64_bit_with_packet_counters(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "mlx5_0")
    fill(port_dir, "counters", PMA_ERRORS, "0")
    fill(port_dir, "counters", DATA, "81985529216486895")  # far above 2^32
    fill(port_dir, "counters", CAST, "12345")
    write(port_dir / "hw_counters" / "out_of_buffer", "3")
    (port,) = discover_ports(str(tmp_path))
    values = values_of(port)
    assert (port.name, port.kind, port.data_bits) == ("mlx5_0/1", "ib", 64)
    assert values["port_xmit_data"] == 81985529216486895
    assert values["unicast_xmit_packets"] == 12345 and values["multicast_rcv_packets"] == 12345
    assert values["port_rcv_discards"] is None  # this kernel does not serve it
    assert port.info()["data_bits"] == 64 and port.read_hw() == {"out_of_buffer": 3}


def test_pre_4_5_counters_ext_supplies_the_64_bit_values(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "mlx4_0")
    fill(port_dir, "counters", PMA_ERRORS, "1")
    fill(port_dir, "counters", DATA, MAX_32)  # the 32-bit ones, pegged
    write(port_dir / "counters_ext" / "port_xmit_data_64", "40000000000")
    write(port_dir / "counters_ext" / "port_rcv_data_64", "50000000000")
    write(port_dir / "counters_ext" / "port_xmit_packets_64", "6000000000")
    write(port_dir / "counters_ext" / "port_rcv_packets_64", "7000000000")
    write(port_dir / "counters_ext" / "port_unicast_xmit_packets", "5999999000")
    write(port_dir / "counters_ext" / "port_multicast_rcv_packets", "77")
    (port,) = discover_ports(str(tmp_path))
    values = values_of(port)
    assert port.data_bits == 64
    assert (values["port_xmit_data"], values["port_rcv_data"]) == (40000000000, 50000000000)
    assert (values["port_xmit_packets"], values["port_rcv_packets"]) == (6000000000, 7000000000)
    assert values["unicast_xmit_packets"] == 5999999000 and values["multicast_rcv_packets"] == 77
    assert values["unicast_rcv_packets"] is None and values["symbol_error"] == 1


def test_hca_without_extended_width_says_32_bits(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "mlx4_1")
    fill(port_dir, "counters", PMA_ERRORS, "0")
    fill(port_dir, "counters", DATA, MAX_32)
    write(port_dir / "counters" / "port_rcv_discards", "9")
    (port,) = discover_ports(str(tmp_path))
    values = values_of(port)
    assert port.data_bits == 32 and values["port_xmit_data"] == int(MAX_32)
    assert values["port_rcv_discards"] == 9 and values["unicast_xmit_packets"] is None


def test_extended_width_without_ietf_counters_shows_by_its_values(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "hfi1_0")
    fill(port_dir, "counters", PMA_ERRORS, "0")
    fill(port_dir, "counters", DATA, "8589934592")  # 2^33: cannot be a 32-bit counter
    (port,) = discover_ports(str(tmp_path))
    assert port.data_bits == 64


def test_roce_bond_and_bonding_masters(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "mlx5_bond_0", layer="Ethernet")
    fill(port_dir, "counters", PMA_ERRORS + DATA + CAST, "5")
    write(port_dir / "gid_attrs" / "ndevs" / "0", "bond0")
    net = tmp_path / "class" / "net"
    for name, where in (
        ("bond0", "devices/virtual/net/bond0"),
        ("ens1f0np0", "devices/pci0000:00/0000:17:00.0/net/ens1f0np0"),
        ("ens1f1np1", "devices/pci0000:00/0000:17:00.1/net/ens1f1np1"),
    ):
        real = tmp_path / where
        write(real / "operstate", "up")
        write(real / "type", "1")
        fill(real, "statistics", NIC_FIELDS[3:], "4")
        net.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(real, net), net / name)
    write(net / "bonding_masters", "bond0")  # a regular file, not an interface
    (port,) = discover_ports(str(tmp_path))
    assert (port.kind, port.netdev, port.data_bits) == ("roce", "bond0", 64)
    nics = discover_nics(str(tmp_path))
    assert [nic.name for nic in nics] == ["ens1f0np0", "ens1f1np1"]
    assert all(dict(zip(NIC_FIELDS, nic.read(), strict=True))["rx_bytes"] == 4 for nic in nics)


def test_efa_has_hw_counters_and_no_pma_counters(tmp_path: Path) -> None:
    port_dir = hca_port(tmp_path, "efa_0", layer="Unspecified")
    write(port_dir / "hw_counters" / "rx_drops", "2")
    write(port_dir / "hw_counters" / "retrans_timeout_events", "1")
    (port,) = discover_ports(str(tmp_path))
    values = values_of(port)
    assert (port.kind, port.data_bits) == ("efa", None)
    assert all(values[name] is None for name in PORT_FIELDS[3:])
    assert port.read_hw() == {"retrans_timeout_events": 1, "rx_drops": 2}


def _hello_with_width(feed: NodeFeed, bits: int | None) -> Hello:
    hello = feed.hello().message
    assert isinstance(hello, Hello)
    ports = [msgspec.structs.replace(p, data_bits=bits) for p in hello.ports]
    return msgspec.structs.replace(hello, ports=ports)


def _pegged_rate(bits: int | None) -> float | None:
    feed = NodeFeed(ports=1)
    state = FleetState([NodeSpec(feed.name)], HealthSection())
    start(state, feed)
    feed.ports[0]["port_xmit_data"] = 4_000_000_000
    state.ingest(type(feed.hello())(feed.name, _hello_with_width(feed, bits), feed.t))
    state.ingest(feed.sample())
    feed.ports[0]["port_xmit_data"] = int(MAX_32)  # the 32-bit counter hit its ceiling
    state.ingest(feed.sample())
    feed.ports[0]["port_xmit_data"] = int(MAX_32)
    state.ingest(feed.sample())
    node = state.snapshot(feed.t).node(feed.name)
    assert node is not None
    return node.ports[0].tx_bytes_per_s


def test_controller_reads_a_pegged_32_bit_counter_as_unknown_not_idle() -> None:
    assert _pegged_rate(32) is None  # saturated: the rate is unknown
    assert _pegged_rate(64) == 0.0  # a 64-bit counter that stands still is idle
