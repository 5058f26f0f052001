"""The history's GPU identities (bus ids included) are read from the state's rows at a
node's first tick, without building the node's GPU objects, and are the objects' own."""

from __future__ import annotations

from dataclasses import replace

from bench.lib.fleet_states import state_ticks
from fleet.model import FleetSnapshot
from history.ring import GpuRegistry
from tests.history.test_steady_columns import _odd_hello, _odd_slow


def _ticks() -> list[FleetSnapshot]:
    return state_ticks(8, 2, _odd_slow, edit_hello=_odd_hello)


def test_identities_from_rows_are_the_objects_identities_and_build_no_gpu() -> None:
    snapshot = _ticks()[-1]
    from_rows, from_objects = GpuRegistry(), GpuRegistry()
    from_rows.layout_of(snapshot.nodes)
    assert all(node.rows is not None and node.rows.built("gpus") is None for node in snapshot.nodes)
    from_objects.layout_of(tuple(node.detached() for node in snapshot.nodes))
    assert from_rows.identities == from_objects.identities
    assert len(from_rows.identities) == 64
    assert from_rows.identities[9].pci_bus_id == "00000000:19:00.0"


def test_a_swapped_gpu_takes_its_new_identity() -> None:
    first, second = _ticks()
    registry = GpuRegistry()
    registry.layout_of(first.nodes)
    node = second.nodes[3].detached()
    gpus = (replace(node.gpus[0], uuid="GPU-swapped", pci_bus_id="00000000:99:00.0"),)
    # The fleet's shape changes too (a node left): the layout is worked out again.
    swapped = (*second.nodes[:3], replace(node, gpus=(*gpus, *node.gpus[1:])), *second.nodes[4:7])
    registry.layout_of(swapped)
    identity = registry.identities[registry.key("node-004", 0) or 0]
    assert (identity.uuid, identity.pci_bus_id) == ("GPU-swapped", "00000000:99:00.0")
    assert registry.identities[registry.key("node-004", 1) or 0].uuid != "GPU-swapped"
