"""Reboots and replaced nodes told by the node's own identity (boot id, machine id)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fleet.drift import STORE_NAME, DriftTracker
from fleet.model import EventRecord
from tests.fleet.test_drift import NODE, T0, fleet, gpu

BOOT_A, BOOT_B = "6f1c0e55-0000-4000-8000-00000000000a", "6f1c0e55-0000-4000-8000-00000000000b"
MACHINE_1, MACHINE_2 = "1" * 32, "2" * 32
BOOTED = replace(NODE, boot_id=BOOT_A, machine_id=MACHINE_1)


def _events(tracker: DriftTracker, t: float, node: object) -> list[tuple[str, str]]:
    snap = tracker.apply(fleet(t, node))  # type: ignore[arg-type]
    return [(e.kind, e.detail) for e in snap.new_events if isinstance(e, EventRecord)]


def test_a_new_boot_id_is_a_reboot_and_the_same_one_is_nothing() -> None:
    tracker = DriftTracker()
    assert _events(tracker, T0, BOOTED) == []  # the first hello is no reboot
    assert _events(tracker, T0 + 1, BOOTED) == []
    rebooted = replace(BOOTED, boot_id=BOOT_B)
    assert _events(tracker, T0 + 60, rebooted) == [("reboot", f"boot id {BOOT_A} -> {BOOT_B}")]
    assert _events(tracker, T0 + 61, rebooted) == []


def test_an_unreadable_id_is_no_evidence() -> None:
    tracker = DriftTracker()
    _events(tracker, T0, BOOTED)
    assert _events(tracker, T0 + 1, replace(BOOTED, boot_id=None)) == []
    assert _events(tracker, T0 + 2, replace(NODE)) == []  # an agent that cannot say
    assert _events(tracker, T0 + 3, BOOTED) == []  # the same boot as before


def test_a_new_machine_id_is_one_node_replaced_even_with_new_serials() -> None:
    tracker = DriftTracker()
    _events(tracker, T0, BOOTED)
    new_gpus = tuple(gpu(i, serial=f"N{i}") for i in range(8))
    replaced = replace(BOOTED, boot_id=BOOT_B, machine_id=MACHINE_2, gpus=new_gpus)
    events = _events(tracker, T0 + 60, replaced)
    kinds = [kind for kind, _ in events]
    assert kinds.count("node_replaced") == 1 and "reboot" not in kinds
    assert ("node_replaced", f"machine id {MACHINE_1} -> {MACHINE_2}") in events
    assert kinds.count("gpu_swap") == 8  # each board is still a swap of its slot


def test_a_reboot_while_the_controller_was_down_still_counts(tmp_path: Path) -> None:
    store = tmp_path / STORE_NAME
    _events(DriftTracker(store=store), T0, BOOTED)
    after_restart = DriftTracker(store=store)
    assert _events(after_restart, T0 + 600, replace(BOOTED, machine_id=MACHINE_2)) == [
        ("node_replaced", f"machine id {MACHINE_1} -> {MACHINE_2}")
    ]
