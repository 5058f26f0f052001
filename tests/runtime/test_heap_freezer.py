"""The runtime freezes the heap once the fleet has settled (gpufleet.runtime.HeapFreezer)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from dataclasses import replace

import pytest

from fleet.model import EventRecord, FleetSnapshot, NodeSnapshot
from gpufleet.runtime import (
    FREEZE_STEP_SHARE,
    FULL_COLLECT_S,
    GC_YOUNG_THRESHOLD,
    REFREEZE_MIN_S,
    SETTLED_TICKS,
    HeapFreezer,
    gc_thresholds,
)


@pytest.fixture(autouse=True)
def unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()  # give the test process its collector back


def _fleet(t: float, streaming: int, nodes: int | None = None) -> FleetSnapshot:
    """``streaming`` of ``nodes`` (as many as stream when not given) streaming at ``t``."""
    total = streaming if nodes is None else nodes
    up = tuple(NodeSnapshot(f"n{i}", status="streaming") for i in range(streaming))
    down = tuple(NodeSnapshot(f"n{i}", status="unreachable") for i in range(streaming, total))
    return FleetSnapshot(taken_at=t, nodes=up + down)


# A fleet whose streaming count moves by less than one freeze step per tick.
WIDE = 64


def test_freezes_after_the_streaming_count_held_still() -> None:
    freezer = HeapFreezer()
    gc.unfreeze()
    for t, streaming in enumerate([1, 2, 3, *[3] * SETTLED_TICKS]):
        assert freezer.frozen_at is None and gc.get_freeze_count() == 0
        freezer.observe(_fleet(float(t), streaming, WIDE), every_node_tried=True)
    assert freezer.frozen_at == float(2 + SETTLED_TICKS)
    assert gc.get_freeze_count() > 0


class _Handshake:
    """Stands for a connect attempt's leftovers: an object in a reference cycle."""

    def __init__(self) -> None:
        self.me = self


def test_cyclic_garbage_of_the_connecting_phase_is_freed_not_frozen() -> None:
    """The automatic full collection is off: garbage still in the generations when the
    fleet settles was frozen with the live heap and stayed resident for good."""
    freezer = HeapFreezer()
    gc.unfreeze()
    leftover = weakref.ref(_Handshake())  # unreachable at once, but only a collection frees it
    gc.disable()  # no automatic collection may free it before the freezer decides
    try:
        for t in range(SETTLED_TICKS + 2):
            freezer.observe(_fleet(float(t), 2), every_node_tried=True)
    finally:
        gc.enable()
    assert freezer.frozen_at is not None and gc.get_freeze_count() > 0
    gc.collect()  # what every later scheduled collection can reach
    assert leftover() is None


def test_a_fleet_that_never_settles_is_still_collected_on_schedule() -> None:
    """Nodes that keep connecting change the streaming count every tick: the freeze never
    comes, and with the automatic full collection off their cycles piled up unbounded."""
    freezer = HeapFreezer()
    gc.unfreeze()
    leftover = weakref.ref(_Handshake())
    gc.disable()
    try:
        for t in range(int(FULL_COLLECT_S)):
            freezer.observe(_fleet(float(t), t % 3, WIDE), every_node_tried=True)
        assert leftover() is not None  # nothing collected it yet: the test can tell
        freezer.observe(_fleet(FULL_COLLECT_S, 1, WIDE), every_node_tried=True)
    finally:
        gc.enable()
    assert freezer.frozen_at is None and freezer.collected_at == FULL_COLLECT_S
    assert leftover() is None


def test_waits_until_every_node_was_tried() -> None:
    freezer = HeapFreezer()
    gc.unfreeze()
    for t in range(3 * SETTLED_TICKS):
        freezer.observe(_fleet(float(t), 3, WIDE), every_node_tried=False)
    assert freezer.frozen_at is None and gc.get_freeze_count() == 0
    for t in range(3 * SETTLED_TICKS, 3 * SETTLED_TICKS + 2):
        freezer.observe(_fleet(float(t), 3, WIDE), every_node_tried=True)
    assert freezer.frozen_at == float(3 * SETTLED_TICKS)


def test_collects_what_is_not_frozen_every_period_once_frozen() -> None:
    freezer = HeapFreezer()
    gc.unfreeze()
    for t in range(SETTLED_TICKS + 2):
        freezer.observe(_fleet(float(t), 2), every_node_tried=True)
    frozen_at = freezer.frozen_at
    assert frozen_at is not None and freezer.collected_at is None
    full = gc.get_stats()[2]["collections"]
    freezer.observe(_fleet(frozen_at + FULL_COLLECT_S - 1, 2), every_node_tried=True)
    assert freezer.collected_at is None and gc.get_stats()[2]["collections"] == full
    freezer.observe(_fleet(frozen_at + FULL_COLLECT_S, 2), every_node_tried=True)
    assert freezer.collected_at == frozen_at + FULL_COLLECT_S
    assert gc.get_stats()[2]["collections"] == full + 1


def test_the_runtime_collects_the_young_often_and_leaves_full_collections_to_the_freezer() -> None:
    young, middle, old = gc_thresholds((700, 10, 10))
    # The young generation is collected every 200 net new objects (the decoded rows of a
    # few messages, still in the cache), the middle one as CPython does.
    assert (young, middle) == (GC_YOUNG_THRESHOLD, 10) == (200, 10)
    # 10 generation-1 collections per tick: never within a day of ticks.
    assert old / 10 > 24 * 3600


def _settle(freezer: HeapFreezer, ended: int = 0) -> float:
    for t in range(SETTLED_TICKS + 2):
        freezer.observe(_fleet(float(t), 2), every_node_tried=True, connections_ended=ended)
    assert freezer.frozen_at is not None
    return freezer.frozen_at


def test_a_steady_fleet_s_scheduled_collections_never_thaw_the_heap() -> None:
    """Thawing scans the whole heap (the length of the first freeze's pause): a fleet
    whose connections all hold pays it never, however long it runs."""
    freezer = HeapFreezer()
    gc.unfreeze()
    frozen_at = _settle(freezer, ended=4)  # connections that ended before the freeze
    held = _Handshake()
    kept = weakref.ref(held)
    gc.collect()
    gc.freeze()  # frozen like the connections up at the freeze
    del held
    for k in range(1, 40):
        freezer.observe(_fleet(frozen_at + k * FULL_COLLECT_S, 2), True, connections_ended=4)
    assert freezer.refreezes == 0 and freezer.frozen_at == frozen_at
    assert kept() is not None  # what was frozen stays frozen


def test_connections_ending_after_the_freeze_thaw_it_at_most_once_per_period() -> None:
    freezer = HeapFreezer()
    gc.unfreeze()
    frozen_at = _settle(freezer)
    held = _Handshake()
    kept = weakref.ref(held)
    gc.collect()
    gc.freeze()
    del held  # a connection up at the freeze has ended: garbage only a thaw reaches
    early = frozen_at + FULL_COLLECT_S * (int(REFREEZE_MIN_S // FULL_COLLECT_S) - 1)
    freezer.observe(_fleet(early, 2), every_node_tried=True, connections_ended=1)
    assert freezer.refreezes == 0 and kept() is not None  # not yet: at most one per period
    due = early + FULL_COLLECT_S
    freezer.observe(_fleet(due, 2), every_node_tried=True, connections_ended=1)
    assert freezer.refreezes == 1 and freezer.frozen_at == due
    assert kept() is None and gc.get_freeze_count() > 0
    # The count did not move since this freeze: the next periods collect, they do not thaw.
    later = due + REFREEZE_MIN_S + FULL_COLLECT_S
    freezer.observe(_fleet(later, 2), every_node_tried=True, connections_ended=1)
    assert freezer.refreezes == 1 and freezer.collected_at == later


def _is_collectable(obj: object) -> bool:
    """Whether a full collection would scan ``obj`` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


def test_the_heap_freezes_in_steps_while_nodes_connect() -> None:
    """One freeze at the settle collected every connection at once (226.5 ms at 1,000
    nodes): each step of newly streaming nodes freezes what they built, so no collection
    ever scans more than one step's connections."""
    freezer = HeapFreezer()
    gc.unfreeze()
    step = int(WIDE * FREEZE_STEP_SHARE)
    built: list[_Handshake] = []
    for t, streaming in enumerate(range(0, WIDE + 1, step)):
        built.append(_Handshake())  # what this tick's newly connected nodes hold
        freezer.observe(_fleet(float(t), streaming, WIDE), every_node_tried=True)
        assert freezer.frozen_at is None  # still connecting
        assert freezer.steps == t and not any(map(_is_collectable, built[:t]))
    assert freezer.steps == round(1 / FREEZE_STEP_SHARE)
    for t in range(len(built), len(built) + SETTLED_TICKS + 1):
        freezer.observe(_fleet(float(t), WIDE, WIDE), every_node_tried=True)
    assert freezer.frozen_at is not None and not any(map(_is_collectable, built))


def test_an_attempt_frozen_in_flight_that_failed_is_freed_by_one_owed_thaw() -> None:
    """A step freezes the connect attempts in flight; one that fails leaves its cycles
    frozen. A fleet that settles with nodes not streaming thaws once, after
    REFREEZE_MIN_S, and a whole fleet never does (the steady test above)."""
    freezer = HeapFreezer()
    gc.unfreeze()
    attempt = _Handshake()
    failed = weakref.ref(attempt)
    step = int(WIDE * FREEZE_STEP_SHARE)
    freezer.observe(_fleet(0.0, step, WIDE), every_node_tried=True)
    assert freezer.steps == 1 and not _is_collectable(attempt)  # frozen in flight
    del attempt  # the attempt failed: its cycle is garbage only a thaw reaches
    for t in range(1, SETTLED_TICKS + 2):
        freezer.observe(_fleet(float(t), step, WIDE), every_node_tried=True)
    frozen_at = freezer.frozen_at
    assert frozen_at is not None and failed() is not None
    freezer.observe(_fleet(frozen_at + FULL_COLLECT_S, step, WIDE), every_node_tried=True)
    assert freezer.refreezes == 0 and failed() is not None  # at most one thaw per period
    due = frozen_at + REFREEZE_MIN_S
    freezer.observe(_fleet(due, step, WIDE), every_node_tried=True)
    assert freezer.refreezes == 1 and failed() is None
    later = due + REFREEZE_MIN_S
    freezer.observe(_fleet(later, step, WIDE), every_node_tried=True)
    assert freezer.refreezes == 1  # owed once, paid once


def test_a_step_scans_only_the_young_generations_and_the_settle_the_rest() -> None:
    """A step's full collection scanned every connection its nodes built (47-71 ms at
    1,000 nodes); the young generations hold only what the last ticks allocated."""
    freezer = HeapFreezer()
    gc.unfreeze()
    generations: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        step = int(WIDE * FREEZE_STEP_SHARE)
        freezer.observe(_fleet(0.0, step, WIDE), every_node_tried=True)
        assert freezer.steps == 1 and generations and max(generations) <= 1
        generations.clear()
        for t in range(1, SETTLED_TICKS + 2):
            freezer.observe(_fleet(float(t), WIDE, WIDE), every_node_tried=True)
        assert freezer.frozen_at is not None and 2 in generations
    finally:
        gc.callbacks.remove(seen)


def _with_failed_attempt(snapshot: FleetSnapshot) -> FleetSnapshot:
    failed = EventRecord(snapshot.taken_at, "n0", "connect_failed", detail="timed out")
    return replace(snapshot, new_events=(failed,))


def test_an_attempt_that_failed_before_its_node_streamed_is_owed_a_thaw() -> None:
    """A step no longer scans the old generation, so a failed attempt's cycle that
    reached it is frozen; the fleet may still settle with every node streaming (the
    node's retry got through), and that thaw is owed all the same."""
    freezer = HeapFreezer()
    gc.unfreeze()
    attempt = _Handshake()
    failed = weakref.ref(attempt)
    gc.collect()  # the attempt lived long enough to reach the old generation
    del attempt  # then it failed: garbage that only a full collection finds
    step = int(WIDE * FREEZE_STEP_SHARE)
    freezer.observe(_fleet(0.0, step, WIDE), every_node_tried=True)
    assert freezer.steps == 1 and failed() is not None  # frozen by the step
    freezer.observe(_with_failed_attempt(_fleet(1.0, step, WIDE)), every_node_tried=True)
    for t in range(2, SETTLED_TICKS + 3):
        freezer.observe(_fleet(float(t), WIDE, WIDE), every_node_tried=True)
    frozen_at = freezer.frozen_at
    assert frozen_at is not None and failed() is not None
    freezer.observe(_fleet(frozen_at + REFREEZE_MIN_S, WIDE, WIDE), every_node_tried=True)
    assert freezer.refreezes == 1 and failed() is None


def test_a_scheduled_collection_after_the_settle_freezes_what_lived_through_it() -> None:
    """Every scheduled collection scanned all the fleet had built since the settle
    (85-114 ms at 3,000 nodes); what lives through one is frozen, so the next scans only
    what came since."""
    freezer = HeapFreezer()
    gc.unfreeze()
    for t in range(SETTLED_TICKS + 2):
        freezer.observe(_fleet(float(t), 2), every_node_tried=True)
    frozen_at = freezer.frozen_at
    assert frozen_at is not None
    kept = _Handshake()  # built after the settle, kept by the fleet
    freezer.observe(_fleet(frozen_at + FULL_COLLECT_S - 1, 2), every_node_tried=True)
    assert _is_collectable(kept)
    freezer.observe(_fleet(frozen_at + FULL_COLLECT_S, 2), every_node_tried=True)
    assert freezer.collected_at == frozen_at + FULL_COLLECT_S and not _is_collectable(kept)
