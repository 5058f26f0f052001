"""A simulated reboot and a replaced node: boot id, machine id, GPU identities, faults."""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

from collectors.sim import ManualClock
from collectors.sim.identity import boot_id, machine_id

SCENARIO = """
[[fault]]
kind = "xid79"
node = "node-001"
gpu = 3
at = 10

[[fault]]
kind = "reboot"
node = "node-001"
at = 60

[[fault]]
kind = "ecc_dbe"
node = "node-001"
gpu = 1
at = 100

[[fault]]
kind = "node_replaced"
node = "node-001"
at = 200
"""


def _ids(node: object) -> tuple[str, str]:
    proc, etc = Path(node.proc_root), Path(node.etc_root)  # type: ignore[attr-defined]
    boot = (proc / "sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    return boot, (etc / "machine-id").read_text(encoding="ascii").strip()


def _uuids() -> list[str]:
    count = pynvml.nvmlDeviceGetCount()
    return [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]


def test_a_reboot_is_a_new_boot_and_a_replacement_a_new_machine(nvml, clock: ManualClock) -> None:  # type: ignore[no-untyped-def]
    node = nvml(scenario=SCENARIO, seed=3)
    first = _ids(node)
    assert first == (boot_id(3, "node-001", 0), machine_id(3, "node-001", 0))
    uuids = _uuids()
    clock.set(20)
    node.tick()
    with pytest.raises(pynvml.NVMLError_GpuIsLost):  # the XID 79 holds until the reboot
        pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(3))
    clock.set(60)
    node.tick()
    assert _ids(node) == (boot_id(3, "node-001", 1), first[1])  # same machine, new boot
    assert _uuids() == uuids  # a reboot keeps the boards (and clears the XID 79)
    clock.set(150)
    assert pynvml.nvmlDeviceGetTotalEccErrors(pynvml.nvmlDeviceGetHandleByIndex(1), 1, 0) > 0
    clock.set(200)
    node.tick()
    assert _ids(node) == (boot_id(3, "node-001", 2), machine_id(3, "node-001", 1))
    replaced = _uuids()
    assert len(set(replaced) & set(uuids)) == 0  # every board is new
    # The new machine starts clean: the ECC error's volatile count is gone.
    assert pynvml.nvmlDeviceGetTotalEccErrors(pynvml.nvmlDeviceGetHandleByIndex(1), 1, 0) == 0
