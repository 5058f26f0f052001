"""An mlx4 HCA with the pre-4.5 ``counters_ext/`` layout, read as node_exporter reads it.

The tree under ``fixtures/sysfs_mlx4_legacy`` is node_exporter's recorded ``mlx4_0``
(``collector/fixtures/sys.ttar``) and ``node_exporter.prom`` is what node_exporter
reports for it (``collector/fixtures/e2e-output.txt``), both at the commit named in that
file. Two things about that tree: on port 1, ``counters_ext/port_*_packets_64`` read 0
while ``counters/port_*_packets`` count; on port 2, ``counters_ext/`` repeats port 1's
values while port 2's own ``counters/`` read 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors.agent.fields import PORT_FIELDS
from collectors.agent.sysfs import discover_ports

FIXTURE = Path(__file__).parent / "fixtures" / "sysfs_mlx4_legacy"

# node_exporter's family -> (gpufleet's field, the factor node_exporter applies).
# procfs multiplies the data counters by 4: the PMA counts them in 4-octet words.
FAMILIES = {
    "state_id": ("state", 1),
    "physical_state_id": ("phys_state", 1),
    "link_downed_total": ("link_downed", 1),
    "link_error_recovery_total": ("link_error_recovery", 1),
    "port_constraint_errors_received_total": ("port_rcv_constraint_errors", 1),
    "port_constraint_errors_transmitted_total": ("port_xmit_constraint_errors", 1),
    "port_discards_received_total": ("port_rcv_discards", 1),
    "port_discards_transmitted_total": ("port_xmit_discards", 1),
    "port_errors_received_total": ("port_rcv_errors", 1),
    "port_transmit_wait_total": ("port_xmit_wait", 1),
    "port_data_received_bytes_total": ("port_rcv_data", 4),
    "port_data_transmitted_bytes_total": ("port_xmit_data", 4),
    "port_packets_received_total": ("port_rcv_packets", 1),
    "port_packets_transmitted_total": ("port_xmit_packets", 1),
    "unicast_packets_received_total": ("unicast_rcv_packets", 1),
    "unicast_packets_transmitted_total": ("unicast_xmit_packets", 1),
    "multicast_packets_received_total": ("multicast_rcv_packets", 1),
    "multicast_packets_transmitted_total": ("multicast_xmit_packets", 1),
}
# Where counters/ lacks a counter, node_exporter has only its legacy_* family.
LEGACY = {
    "legacy_packets_received_total": "port_rcv_packets",
    "legacy_packets_transmitted_total": "port_xmit_packets",
}


def oracle() -> dict[tuple[str, str], float]:
    """(family, port) -> node_exporter's value, from the recorded exposition."""
    values = {}
    for line in (FIXTURE / "node_exporter.prom").read_text().splitlines():
        if line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        family = series.split("{", 1)[0].removeprefix("node_infiniband_")
        port = series.split('port="', 1)[1].split('"', 1)[0]
        values[(family, port)] = float(value)
    return values


@pytest.fixture
def ports(tmp_path: Path) -> dict[str, dict[str, object]]:
    shutil.copytree(FIXTURE / "class", tmp_path / "class")
    found = discover_ports(str(tmp_path))
    return {p.name: dict(zip(PORT_FIELDS, p.read(), strict=True)) for p in found}


def test_every_counter_node_exporter_reports_reads_the_same(
    ports: dict[str, dict[str, object]],
) -> None:
    expected = oracle()
    compared = 0
    for port in ("1", "2"):
        values = ports[f"mlx4_0/{port}"]
        for family, (field, factor) in FAMILIES.items():
            want = expected.get((family, port))
            got = values[field]
            if want is None:
                if field not in LEGACY.values():
                    assert got is None, (family, port, got)
                continue
            assert isinstance(got, int) and got * factor == want, (family, port, got, want)
            compared += 1
        rate = values["rate_gbps"]
        assert isinstance(rate, float)
        assert rate * 125_000_000 == expected[("rate_bytes_per_second", port)]
    assert compared == 28  # 18 families on port 1, 10 on port 2 (its counters/ has fewer files)


def test_packets_come_from_counters_not_the_zero_counters_ext(
    ports: dict[str, dict[str, object]],
) -> None:
    port1 = ports["mlx4_0/1"]
    assert (port1["port_xmit_packets"], port1["port_rcv_packets"]) == (6_235_865, 6_825_908_347)


def test_second_port_keeps_its_own_zero_data_not_the_first_ports(
    ports: dict[str, dict[str, object]],
) -> None:
    port2 = ports["mlx4_0/2"]
    expected = oracle()
    assert (port2["port_xmit_data"], port2["port_rcv_data"]) == (0, 0)
    assert (port2["unicast_xmit_packets"], port2["multicast_rcv_packets"]) == (0, 0)
    # counters/ of port 2 has no packet counters: node_exporter's legacy_* reading stands.
    for family, field in LEGACY.items():
        assert port2[field] == expected[(family, "2")]
