"""Fake NVML calls the delivery ledger needs: PCIe link, total energy, provider processes.

The provider's processes have fixed PIDs and run as root (uid 0) in the fake procfs
(:mod:`collectors.sim.procfs`), so the agent tells them from the renter's job exactly as
on a real node: by the owner and name under ``/proc``.
"""

from __future__ import annotations

from typing import Any

from collectors.sim.cbase import SUCCESS, LibraryBase, out
from collectors.sim.model import GpuView

PCIE_GEN_MAX, PCIE_WIDTH_MAX = 5, 16
# Provider processes: (pid, argv) as procfs shows them, uid 0.
RESIDENT_PID = 4_200_001
CHECK_PID = 4_200_002
PROVIDER_ARGV = {
    RESIDENT_PID: ["/usr/bin/nv-netd", "--daemon"],
    CHECK_PID: ["/opt/provider/bin/gpu-burn", "--all", "1200"],
}


def provider_pids(view: GpuView) -> list[int]:
    """PIDs of the provider processes on this GPU now."""
    pids = []
    if view.faults.reserved_bytes:
        pids.append(RESIDENT_PID)
    if view.faults.provider_load:
        pids.append(CHECK_PID)
    return pids


class DeliveryCalls(LibraryBase):
    """PCIe link generation and width, the total energy counter."""

    def _link(self, handle: Any, ref: Any, slot: int) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = (view.faults.pcie or (PCIE_GEN_MAX, PCIE_WIDTH_MAX))[slot]
        return SUCCESS

    def _c_nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        return self._link(handle, ref, 0)

    def _c_nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        return self._link(handle, ref, 1)

    def _c_nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = PCIE_GEN_MAX
        return SUCCESS

    def _c_nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = PCIE_WIDTH_MAX
        return SUCCESS

    def _c_nvmlDeviceGetTotalEnergyConsumption(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = self._model.energy_mj(view.index, self.now())
        return SUCCESS
