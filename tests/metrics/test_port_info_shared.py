"""Ports in the same state share one ``gpufleet_port_info`` value (exporter/catalog.py).

Each scrape built three levels of tuples per port, kept until the next scrape and old
enough by then that the collector scanned them at every full collection (~27,000 at
3,000 nodes, bench/bench_gc_tracked.py).
"""

from __future__ import annotations

from exporter.catalog import _PORT_INFOS_MAX, _port_info
from fleet.model import PortSnapshot


def _port(name: str, state: str | None, phys: str | None = "LinkUp") -> PortSnapshot:
    return PortSnapshot(name, "ib", state, phys_state=phys)


def test_ports_in_one_state_share_one_value() -> None:
    a, b = _port("mlx5_0/1", "ACTIVE"), _port("mlx5_1/1", "ACTIVE")
    assert _port_info(a) is _port_info(b)
    assert _port_info(a) == ((("ACTIVE", "LinkUp"), 1),)


def test_other_states_keep_their_own_labels() -> None:
    assert _port_info(_port("p", "DOWN", "Polling")) == ((("DOWN", "Polling"), 1),)
    assert _port_info(_port("p", "INIT", None)) == ((("INIT", ""), 1),)
    assert _port_info(_port("p", None)) == ()


def test_the_shared_values_stay_bounded_under_hostile_states() -> None:
    for i in range(3 * _PORT_INFOS_MAX):
        info = _port_info(_port("p", f"STATE-{i}"))
        assert info == (((f"STATE-{i}", "LinkUp"), 1),)
    from exporter import catalog

    assert len(catalog._PORT_INFOS) <= _PORT_INFOS_MAX
