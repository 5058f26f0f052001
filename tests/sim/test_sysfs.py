"""The fake sysfs tree: layout, port faults at their times, octets/4 and clamping."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pynvml

from collectors import sim
from collectors.agent.fields import NIC_FIELDS, PORT_COUNTER_BITS, PORT_FIELDS
from collectors.sim import ManualClock, SimNode


def _port(node: SimNode, hca: int, name: str) -> str:
    return (node.sysfs_root / f"class/infiniband/mlx5_{hca}/ports/1" / name).read_text().strip()


def _counter(node: SimNode, hca: int, name: str) -> int:
    return int(_port(node, hca, f"counters/{name}"))


def test_tree_has_eight_ndr_hcas_and_one_nic(install_node) -> None:
    node = install_node()
    hcas = sorted(p.name for p in (node.sysfs_root / "class/infiniband").iterdir())
    assert hcas == [f"mlx5_{i}" for i in range(8)]
    for hca in range(8):
        assert _port(node, hca, "state") == "4: ACTIVE"
        assert _port(node, hca, "phys_state") == "5: LinkUp"
        assert _port(node, hca, "rate") == "400 Gb/sec (4X NDR)"
        assert _port(node, hca, "link_layer") == "InfiniBand"
        for name in PORT_FIELDS[3:]:
            if name != "port_rcv_discards":  # mlx5 on a current kernel has no such file
                assert _counter(node, hca, name) >= 0
        assert (node.sysfs_root / f"class/infiniband/mlx5_{hca}/ports/1/hw_counters").is_dir()
    nics = list((node.sysfs_root / "class/net").iterdir())
    assert len(nics) == 1
    nic = nics[0]
    assert (nic / "operstate").read_text() == "up\n"
    assert int((nic / "speed").read_text()) > 0
    stats = {p.name for p in (nic / "statistics").iterdir()}
    assert set(NIC_FIELDS[3:]) <= stats
    # The staging area for atomic replaces lives outside the listed directories.
    assert not any(p.name.endswith(".tmp") for p in node.sysfs_root.rglob("*"))


def test_data_counters_are_octets_over_four_and_grow(install_node, clock: ManualClock) -> None:
    node = install_node()
    before = _counter(node, 0, "port_xmit_data")
    clock.set(10)
    node.tick()
    after = _counter(node, 0, "port_xmit_data")
    bytes_per_s = (after - before) * 4 / 10
    assert 1e9 < bytes_per_s <= 50e9  # some traffic, never beyond 400 Gb/s


def test_ib_link_down_flaps_and_counts_downings(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 2
at = 10
until = 70
flap = true
down_s = 5
up_s = 15
"""
    )
    assert _counter(node, 2, "link_downed") == 0
    timeline = {10: "1: DOWN", 14: "1: DOWN", 15: "4: ACTIVE", 30: "1: DOWN", 36: "4: ACTIVE"}
    for t, state in timeline.items():
        clock.set(t)
        node.tick()
        assert _port(node, 2, "state") == state, t
        assert _port(node, 2, "phys_state") == ("2: Polling" if "DOWN" in state else "5: LinkUp")
    assert _counter(node, 2, "link_downed") == 2
    clock.set(100)
    node.tick()
    assert _port(node, 2, "state") == "4: ACTIVE"
    assert _counter(node, 2, "link_downed") == 3  # down at 10, 30 and 50
    assert _port(node, 1, "state") == "4: ACTIVE" and _counter(node, 1, "link_downed") == 0


def test_ib_link_down_without_flap_holds_until_recover(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 0
at = 5
[[fault]]
kind = "recover"
node = "node-001"
at = 500
"""
    )
    clock.set(400)
    node.tick()
    assert _port(node, 0, "state") == "1: DOWN" and _counter(node, 0, "link_downed") == 1
    clock.set(500)
    node.tick()
    assert _port(node, 0, "state") == "4: ACTIVE" and _counter(node, 0, "link_downed") == 1


def test_symbol_errors_rise_at_their_rate_and_clamp(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_symbol_errors"
node = "node-001"
port = 5
at = 100
rate = 50
"""
    )
    clock.set(100)
    node.tick()
    start = _counter(node, 5, "symbol_error")
    clock.set(110)
    node.tick()
    assert _counter(node, 5, "symbol_error") - start == 500
    clock.set(100_000)  # 5 million errors: a 16-bit counter pegs at all ones
    node.tick()
    assert _counter(node, 5, "symbol_error") == 2 ** PORT_COUNTER_BITS["symbol_error"] - 1


def test_link_downed_clamps_at_eight_bits(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 4
at = 0
flap = true
down_s = 1
up_s = 1
"""
    )
    clock.set(10_000)  # 5000 flaps
    node.tick()
    assert _counter(node, 4, "link_downed") == 255
    assert _counter(node, 4, "link_error_recovery") == 255


def test_degraded_rate_reads_lower_while_it_holds(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_degraded_rate"
node = "node-001"
port = 7
at = "1m"
until = "2m"
rate = "100 Gb/sec (1X NDR)"
"""
    )
    clock.set(60)
    node.tick()
    assert _port(node, 7, "rate") == "100 Gb/sec (1X NDR)"
    assert _port(node, 7, "state") == "4: ACTIVE"
    clock.set(120)
    node.tick()
    assert _port(node, 7, "rate") == "400 Gb/sec (4X NDR)"


def test_ticker_thread_refreshes_the_tree(install_node, clock: ManualClock) -> None:
    node = install_node(refresh_s=0.02)
    path: Path = node.sysfs_root / "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data"
    before = path.read_text()
    clock.set(5)
    changed = _wait_for(lambda: path.read_text() != before)
    assert changed


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while time.monotonic() < deadline:
        if condition():
            return True
        pause.wait(0.01)
    return condition()


def test_a_down_link_moves_no_data_and_drops_packets(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 6
at = 10
until = 30
"""
    )
    readings = {}
    for t in (10, 20, 30, 40):
        clock.set(t)
        node.tick()
        readings[t] = (_counter(node, 6, "port_xmit_data"), _counter(node, 6, "port_xmit_discards"))
    assert readings[20][0] == readings[10][0] == readings[30][0]  # nothing moved while down
    assert readings[40][0] > readings[30][0]  # traffic resumes
    assert readings[30][1] - readings[10][1] == 50 * 20
    assert readings[40][1] == readings[30][1]


def test_default_install_uses_real_time_and_cleans_its_temp_tree() -> None:
    previous = pynvml.nvmlLib
    try:
        with sim.install("node-009") as node:
            root = node.sysfs_root
            assert pynvml.nvmlLib is node.library
            assert (root / "class/infiniband/mlx5_0/ports/1/state").is_file()
            first = node.elapsed()
            assert _wait_for(lambda: node.elapsed() > first)  # a real, running clock
            assert 0 <= first < 60
        assert not root.exists()  # install() made it, close() removed it
    finally:
        pynvml.nvmlLib = previous
        pynvml._nvmlGetFunctionPointer_cache.clear()


def test_overlapping_outages_never_run_counters_backwards(install_node, clock: ManualClock) -> None:
    node = install_node(
        scenario="""
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 3
at = 10
until = 40
[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 3
at = 20
until = 50
flap = true
down_s = 3
up_s = 2
"""
    )
    previous = 0
    for t in range(0, 80, 1):
        clock.set(t)
        node.tick()
        data = _counter(node, 3, "port_xmit_data")
        assert data >= previous, t
        # Down 10-43 (the outage, then flaps 40-43) and 45-48 (the last flap); moving otherwise.
        assert (data == previous) == (10 < t <= 43 or 45 < t <= 48) or t == 0
        previous = data
