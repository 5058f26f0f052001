"""Ports and NICs read from a sysfs tree in a temporary directory (the kernel's file formats)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from collectors.agent.fields import NIC_FIELDS, PORT_FIELDS
from collectors.agent.sysfs import (
    AttributeReader,
    discover_nics,
    discover_ports,
    is_sysfs_mount,
    parse_code,
    parse_rate,
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def make_port(root: Path, device: str, number: int, *, layer: str = "InfiniBand") -> Path:
    port = root / "class" / "infiniband" / device / "ports" / str(number)
    write(port / "state", "4: ACTIVE")
    write(port / "phys_state", "5: LinkUp")
    write(port / "rate", "400 Gb/sec (4X NDR)")
    write(port / "link_layer", layer)
    for name in PORT_FIELDS[3:]:
        write(port / "counters" / name, "7")
    return port


@pytest.mark.parametrize(
    ("text", "code"),
    [("4: ACTIVE", 4), ("1: DOWN", 1), ("5: LinkUp", 5), ("garbage", None), (None, None)],
)
def test_state_files_parse_to_their_codes(text: str | None, code: int | None) -> None:
    assert parse_code(text) == code


@pytest.mark.parametrize(
    ("text", "gbps"),
    [("400 Gb/sec (4X NDR)", 400.0), ("2.5 Gb/sec (1X SDR)", 2.5), ("", None), ("x", None)],
)
def test_rate_parses_to_gbps(text: str, gbps: float | None) -> None:
    assert parse_rate(text) == gbps


def test_port_values_follow_port_fields(tmp_path: Path) -> None:
    port_dir = make_port(tmp_path, "mlx5_0", 1)
    write(port_dir / "counters" / "link_downed", "3")
    (port,) = discover_ports(str(tmp_path))
    values = dict(zip(PORT_FIELDS, port.read(), strict=True))
    assert port.name == "mlx5_0/1" and port.kind == "ib"
    assert values["state"] == 4 and values["phys_state"] == 5 and values["rate_gbps"] == 400.0
    assert values["link_downed"] == 3 and values["port_rcv_data"] == 7


def test_missing_files_read_as_null_never_a_crash(tmp_path: Path) -> None:
    port_dir = make_port(tmp_path, "mlx5_1", 1)
    (port_dir / "rate").unlink()
    (port_dir / "counters" / "symbol_error").unlink()
    write(port_dir / "counters" / "port_xmit_wait", "not a number")
    (port,) = discover_ports(str(tmp_path))
    values = dict(zip(PORT_FIELDS, port.read(), strict=True))
    assert values["rate_gbps"] is None
    assert values["symbol_error"] is None
    assert values["port_xmit_wait"] is None
    assert values["link_downed"] == 7


def test_port_kinds_from_link_layer_and_device(tmp_path: Path) -> None:
    make_port(tmp_path, "efa_0", 1, layer="Unspecified")
    roce = make_port(tmp_path, "mlx5_2", 1, layer="Ethernet")
    write(roce / "gid_attrs" / "ndevs" / "0", "eth2")
    make_port(tmp_path, "mlx5_3", 1)
    kinds = {p.name: (p.kind, p.netdev) for p in discover_ports(str(tmp_path))}
    assert kinds == {
        "efa_0/1": ("efa", None),
        "mlx5_2/1": ("roce", "eth2"),
        "mlx5_3/1": ("ib", None),
    }


def test_hw_counters_are_read_by_name(tmp_path: Path) -> None:
    port_dir = make_port(tmp_path, "mlx5_0", 1)
    write(port_dir / "hw_counters" / "out_of_buffer", "12")
    write(port_dir / "hw_counters" / "rnr_nak_retry_err", "0")
    write(port_dir / "hw_counters" / "lifespan", "bogus")
    (port,) = discover_ports(str(tmp_path))
    assert port.read_hw() == {"out_of_buffer": 12, "rnr_nak_retry_err": 0}


def test_nics_skip_loopback_and_read_statistics(tmp_path: Path) -> None:
    for name in ("lo", "eth0"):
        nic = tmp_path / "class" / "net" / name
        write(nic / "operstate", "up")
        write(nic / "speed", "100000")
        write(nic / "carrier_changes", "4")
        for stat in NIC_FIELDS[3:]:
            write(nic / "statistics" / stat, "9")
    (nic,) = discover_nics(str(tmp_path))
    values = dict(zip(NIC_FIELDS, nic.read(), strict=True))
    assert nic.name == "eth0"
    assert values["up"] == 1 and values["speed_mbps"] == 100000 and values["carrier_changes"] == 4
    assert values["rx_crc_errors"] == 9


def test_ipoib_interfaces_are_not_nics(tmp_path: Path) -> None:
    for name, arphrd in (("ib0", "32"), ("eth3", "1")):
        write(tmp_path / "class" / "net" / name / "type", arphrd)
    assert [nic.name for nic in discover_nics(str(tmp_path))] == ["eth3"]


def test_a_down_nic_has_no_speed(tmp_path: Path) -> None:
    nic_dir = tmp_path / "class" / "net" / "eth1"
    write(nic_dir / "operstate", "down")
    write(nic_dir / "speed", "-1")
    (nic,) = discover_nics(str(tmp_path))
    values = dict(zip(NIC_FIELDS, nic.read(), strict=True))
    assert values["up"] == 0 and values["speed_mbps"] is None and values["rx_bytes"] is None


def test_an_absent_tree_has_no_ports(tmp_path: Path) -> None:
    assert discover_ports(str(tmp_path / "nothing")) == []
    assert discover_nics(str(tmp_path / "nothing")) == []


def test_only_a_mounted_sysfs_keeps_files_open(tmp_path: Path) -> None:
    assert is_sysfs_mount("/sys")
    assert is_sysfs_mount("/sys/class/net")
    assert not is_sysfs_mount(str(tmp_path))


def test_an_open_sysfs_attribute_reads_fresh_values_on_each_read() -> None:
    # The host's loopback counter: a real sysfs attribute, regenerated per read.
    reader = AttributeReader(keep_open=True)
    path = "/sys/class/net/lo/statistics/tx_packets"
    before = reader.integer(path)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", ("127.0.0.1", 9))
    after = reader.integer(path)
    reader.close()
    assert before is not None and after is not None and after > before


def test_an_open_reader_retries_a_file_that_was_missing(tmp_path: Path) -> None:
    reader = AttributeReader(keep_open=True)
    path = tmp_path / "link_downed"
    assert reader.integer(str(path)) is None
    write(path, "2")
    assert reader.integer(str(path)) == 2
    reader.close()
