"""The bench's frozen-garbage probe: what a thaw would free, sized without freeing it."""

from __future__ import annotations

import gc
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from fleet.model import FleetSnapshot, NodeSnapshot
from gpufleet.runtime import SETTLED_TICKS, HeapFreezer, freeze_live_heap

_LIB = Path(__file__).resolve().parents[2] / "bench" / "lib" / "fleet_probe.py"


def _fleet_probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleet_probe_under_test", _LIB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fleet_probe = _fleet_probe()


class _Runtime:
    """What the probe reads of a FleetRuntime: its heap freezer."""

    def __init__(self) -> None:
        self.heap = HeapFreezer()


class _Connection:
    """Stands for an ended SSH connection: objects in a reference cycle."""

    def __init__(self) -> None:
        self.me = self


def _fleet(t: float) -> FleetSnapshot:
    return FleetSnapshot(taken_at=t, nodes=(NodeSnapshot("n0", status="streaming"),))


@pytest.fixture(autouse=True)
def unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()  # give the test process its collector back


def test_sizes_frozen_cycles_keeps_them_resident_and_records_none_of_its_pauses(
    tmp_path: Path,
) -> None:
    runtime = _Runtime()
    gc.unfreeze()
    freeze_live_heap()  # as FleetRuntime.start does: a step freezes what came after
    for t in range(SETTLED_TICKS + 2):
        runtime.heap.observe(_fleet(float(t)), every_node_tried=True)
    frozen_at = runtime.heap.frozen_at
    assert frozen_at is not None
    ended = _Connection()
    ids = {id(ended)}
    gc.collect()
    gc.freeze()  # up at a freeze, as the connections are
    del ended  # then ended: cyclic garbage no collection reaches
    pauses = fleet_probe.GcPauses(tmp_path / "stats.gc")
    probe = fleet_probe.FrozenGarbage(3.0, pauses)
    gc.callbacks.append(pauses)
    try:
        probe.on_tick(runtime, _fleet(frozen_at + 2.0))
        assert probe.found is None  # not yet
        probe.on_tick(runtime, _fleet(frozen_at + 3.0))
    finally:
        gc.callbacks.remove(pauses)
    assert probe.found is not None
    assert probe.found["objects"] >= 1 and probe.found["kib"] > 0
    assert "_Connection" in dict(probe.found["types"])
    # Resident still, as in the product until a thaw (the collection cleared weakrefs).
    assert ids <= {id(o) for o in probe.kept if isinstance(o, _Connection)}
    assert gc.get_freeze_count() > 0  # and frozen again
    assert pauses.records.columns() == [[], [], [], []]  # the bench's, not the product's
