"""The DCGM fields gpufleet serves and how each is read from a GPU snapshot.

Names, types and units follow dcgm-exporter's ``etc/default-counters.csv``
(NVIDIA/dcgm-exporter at d5e5f510a1b6b393f39a43293ccd9dc985defc79, release 4.5.3-4.8.2);
the help texts are gpufleet's own. The opt-in fields of dcgm-exporter 4.8.4 (fabric
health, the management power limit) take their meaning and values from DCGM's
``dcgmlib/dcgm_fields.h`` (NVIDIA/DCGM at 72fa3feaa67d716a75323a8f47c34ff3ee73f824,
DCGM 4.6.0): field 174 ``DCGM_FI_DEV_FABRIC_HEALTH_MASK``, 175
``DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY`` (0 not supported, 1 healthy, 2 unhealthy, 3 limited
capacity) and 160 ``DCGM_FI_DEV_POWER_MGMT_LIMIT`` (W).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from fleet.model import GpuSnapshot

MIB = float(1 << 20)
LABELS = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "hostname",
    "DCGM_FI_DRIVER_VERSION",
)
Reading = float | int | bool | None


@dataclass(frozen=True, slots=True)
class DcgmField:
    """One DCGM field as dcgm-exporter exposes it, and how to read it from a GPU snapshot."""

    name: str
    type: Literal["gauge", "counter"]
    help: str
    read: Callable[[GpuSnapshot], Reading]

    def header(self) -> str:
        """The ``# HELP`` and ``# TYPE`` lines."""
        return f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.type}\n"


def _ratio(percent: float | None) -> float | None:
    return None if percent is None else percent / 100.0


def _mib(value: int | None) -> float | None:
    return None if value is None else value / MIB


def _fb_free(gpu: GpuSnapshot) -> float | None:
    if gpu.memory_total_bytes is None or gpu.mem_used_bytes is None:
        return None
    return max(gpu.memory_total_bytes - gpu.mem_used_bytes, 0) / MIB


def _field(name: str, type_: Literal["gauge", "counter"], help_: str, attr: str) -> DcgmField:
    return DcgmField(name, type_, help_, attrgetter(attr))


def _optional(name: str, type_: Literal["gauge", "counter"], help_: str, attr: str) -> DcgmField:
    """A field read by attribute name from a snapshot that may not carry it.

    The node agent reports these where the driver and the agent have them (the NVML
    total energy counter as the slow field ``energy_mj``, ...); a snapshot without the
    attribute, like a reading that failed, emits no series.
    """

    def read(gpu: GpuSnapshot) -> Reading:
        value: Reading = getattr(gpu, attr, None)
        return value

    return DcgmField(name, type_, help_, read)


FIELDS: tuple[DcgmField, ...] = (
    _field("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz).", "sm_clock_mhz"),
    _field("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C).", "temp_c"),
    _field("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W).", "power_w"),
    _field(
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Enforced power limit (W).", "power_limit_w"
    ),
    _field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (%).", "util_gpu"),
    _field("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (%).", "util_mem"),
    DcgmField(
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Frame buffer used (MiB).",
        lambda gpu: _mib(gpu.mem_used_bytes),
    ),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer free (MiB).", _fb_free),
    DcgmField(
        "DCGM_FI_DEV_FB_TOTAL",
        "gauge",
        "Frame buffer in total (MiB).",
        lambda gpu: _mib(gpu.memory_total_bytes),
    ),
    DcgmField(
        "DCGM_FI_PROF_SM_ACTIVE",
        "gauge",
        "Ratio of cycles an SM had a warp resident (0-1).",
        lambda gpu: _ratio(gpu.sm_active),
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor pipes were active (0-1).",
        lambda gpu: _ratio(gpu.tensor_active),
    ),
    _field(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Clock-event (throttle) reasons, NVML bitmask.",
        "clock_reasons",
    ),
    _field("DCGM_FI_DEV_PSTATE", "gauge", "Performance state (0 fastest).", "pstate"),
    _field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays in total.", "pcie_replay"),
    _field(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Corrected (single-bit) ECC errors since driver load.",
        "ecc_corr_vol",
    ),
    _field(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Uncorrected (double-bit) ECC errors since driver load.",
        "ecc_unc_vol",
    ),
    _field(
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "counter",
        "Corrected (single-bit) ECC errors over the device's life.",
        "ecc_corr_agg",
    ),
    _field(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Uncorrected (double-bit) ECC errors over the device's life.",
        "ecc_unc_agg",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_SBE",
        "counter",
        "Pages retired for single-bit errors.",
        "retired_sbe",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_DBE",
        "counter",
        "Pages retired for double-bit errors.",
        "retired_dbe",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_PENDING",
        "counter",
        "1 when a page retirement waits for a reboot.",
        "retired_pending",
    ),
    _field(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Rows remapped for correctable errors.",
        "remap_corr",
    ),
    _field(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Rows remapped for uncorrectable errors.",
        "remap_unc",
    ),
    _field(
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "gauge",
        "1 when a row remap waits for a GPU reset.",
        "remap_pending",
    ),
    _field(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "1 when a row remap failed.",
        "remap_failure",
    ),
    # In dcgm-exporter's default set; the agent reports them where it reads them.
    _optional("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock (MHz).", "mem_clock_mhz"),
    _optional("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (C).", "memory_temp_c"),
    _optional(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Energy used since the driver was loaded (mJ).",
        "energy_mj",
    ),
    # Opt-in in dcgm-exporter 4.8.4. A limit and a status code go up and down: gauges.
    _optional(
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "gauge",
        "Power management limit requested (W).",
        "power_mgmt_limit_w",
    ),
    _optional(
        "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY",
        "gauge",
        "Fabric health: 0 not supported, 1 healthy, 2 unhealthy, 3 limited capacity.",
        "fabric_health_summary",
    ),
    _optional(
        "DCGM_FI_DEV_FABRIC_HEALTH_MASK",
        "gauge",
        "Fabric health bitmask (NVML_GPU_FABRIC_HEALTH_MASK_*).",
        "fabric_health_mask",
    ),
)

XID_ERRORS = DcgmField(
    "DCGM_FI_DEV_XID_ERRORS",
    "gauge",
    "Code of the last XID seen on the GPU since this exporter started (0: none).",
    lambda gpu: None,  # read from the XID tally, which sees every snapshot
)
