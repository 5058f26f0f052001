"""The per-GPU ``gpufleet_*`` families and where each value comes from (docs/metrics.md).

A GPU's base labels are ``node, gpu, uuid, model``; ``model`` is the GPU's own
product name. Columns marked ``slow`` are read on the agent's slow cadence.
"""

from __future__ import annotations

from exporter.families import (
    Column,
    EntityKind,
    Flags,
    Labelled,
    OneHot,
    counter,
    gauge,
)
from fleet.model import VERDICTS, GpuSnapshot

GPU_LABELS = ("node", "gpu", "uuid", "model")
PROBE_VERDICTS = ("pass", "slow", "straggler", "fail")

# NVML clock-event reasons (nvmlClocksEventReason*), named as nvidia-smi -q names them.
CLOCK_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)


def _reasons(gpu: GpuSnapshot) -> tuple[tuple[tuple[str, ...], int], ...]:
    return tuple(((reason,), 1) for reason in dict.fromkeys(gpu.reasons))


G = GPU_LABELS
GPU_UTIL = gauge("gpufleet_gpu_utilization_percent", "Percent of time a kernel ran.", G)
GPU_MEM_UTIL = gauge(
    "gpufleet_gpu_memory_utilization_percent", "Percent of time memory was read or written.", G
)
GPU_SM_ACTIVE = gauge("gpufleet_gpu_sm_active_percent", "Percent of SMs busy (GPM).", G)
GPU_TENSOR = gauge("gpufleet_gpu_tensor_active_percent", "Percent tensor pipes busy (GPM).", G)
GPU_MEM_USED = gauge("gpufleet_gpu_memory_used_bytes", "Frame buffer memory used.", G)
GPU_MEM_TOTAL = gauge("gpufleet_gpu_memory_total_bytes", "Frame buffer memory in total.", G)
GPU_POWER = gauge("gpufleet_gpu_power_watts", "Power draw.", G)
GPU_ENERGY = counter(
    "gpufleet_gpu_energy_joules_total",
    "Energy the GPU used since its driver loaded (NVML's total energy counter).",
    G,
)
GPU_POWER_LIMIT = gauge("gpufleet_gpu_power_limit_watts", "Enforced power limit.", G)
GPU_TEMP = gauge("gpufleet_gpu_temperature_celsius", "GPU temperature.", G)
GPU_SM_CLOCK = gauge("gpufleet_gpu_sm_clock_hertz", "SM clock.", G)
GPU_PSTATE = gauge("gpufleet_gpu_performance_state", "Performance state (0 fastest, 15).", G)
GPU_REASONS = gauge(
    "gpufleet_gpu_clock_event_reasons", "Clock-event (throttle) reasons as the NVML bitmask.", G
)
GPU_REASON = gauge(
    "gpufleet_gpu_clock_event_reason_active",
    "1 for each clock-event reason now active; absent when inactive.",
    (*G, "reason"),
)
GPU_ECC = counter(
    "gpufleet_gpu_ecc_errors_total",
    "ECC errors; scope volatile counts since driver load, aggregate over the device's life.",
    (*G, "error", "scope"),
)
GPU_RETIRED = gauge("gpufleet_gpu_retired_pages", "Retired memory pages by cause.", (*G, "cause"))
GPU_RETIRED_PENDING = gauge(
    "gpufleet_gpu_retired_pages_pending", "1 when a page retirement waits for a reboot.", G
)
GPU_REMAPPED = gauge("gpufleet_gpu_remapped_rows", "Remapped memory rows by cause.", (*G, "cause"))
GPU_REMAP_PENDING = gauge(
    "gpufleet_gpu_row_remap_pending", "1 when a row remap waits for a GPU reset.", G
)
GPU_REMAP_FAILURE = gauge("gpufleet_gpu_row_remap_failure", "1 when a row remap failed.", G)
GPU_PCIE_REPLAY = counter("gpufleet_gpu_pcie_replay_total", "PCIe replays.", G)
GPU_NVLINK_ACTIVE = gauge("gpufleet_gpu_nvlink_links_active", "NVLink links enabled.", G)
GPU_NVLINK_TOTAL = gauge("gpufleet_gpu_nvlink_links", "NVLink links the GPU has.", G)
GPU_NVLINK_CRC = gauge(
    "gpufleet_gpu_nvlink_crc_errors_per_second", "NVLink CRC errors per second, all links.", G
)
GPU_LOST = gauge("gpufleet_gpu_lost", "1 when the GPU fell off the bus (NVML GpuIsLost).", G)
GPU_VERDICT = gauge(
    "gpufleet_gpu_verdict",
    "GPU health verdict, one-hot: 1 for the current verdict, 0 for the others.",
    (*G, "verdict"),
)
GPU_REASON_INFO = gauge(
    "gpufleet_gpu_verdict_reason",
    "Why the GPU has its verdict, one series per reason, value 1; absent for a healthy GPU.",
    (*G, "reason"),
)
GPU_PROBE = gauge(
    "gpufleet_gpu_probe_verdict",
    "Latest probe verdict, one-hot; absent for a GPU never probed.",
    (*G, "verdict"),
)
GPU_XID = counter(
    "gpufleet_gpu_xid_errors_total",
    "XID events seen by this exporter since it started, by XID code.",
    (*G, "xid"),
)

LINK_EVENTS = counter(
    "gpufleet_link_events_total",
    "Link events seen by this exporter since it started (link_down, link_up, link_downed,"
    " link_rate_low, link_rate_ok, nvlink_down, nvlink_up), by node and kind.",
    ("node", "kind"),
)

GPU = EntityKind(
    GPU_LABELS,
    (
        Column(GPU_UTIL, "util_gpu"),
        Column(GPU_MEM_UTIL, "util_mem"),
        Column(GPU_SM_ACTIVE, "sm_active"),
        Column(GPU_TENSOR, "tensor_active"),
        Column(GPU_MEM_USED, "mem_used_bytes"),
        Column(GPU_MEM_TOTAL, "memory_total_bytes", slow=True),
        Column(GPU_POWER, "power_w"),
        Column(GPU_ENERGY, "energy_mj", scale=1e-3, slow=True),
        Column(GPU_POWER_LIMIT, "power_limit_w", slow=True),
        Column(GPU_TEMP, "temp_c"),
        Column(GPU_SM_CLOCK, "sm_clock_mhz", scale=1e6),
        Column(GPU_PSTATE, "pstate"),
        Column(GPU_REASONS, "clock_reasons"),
        Column(GPU_ECC, "ecc_corr_vol", ("corrected", "volatile"), slow=True),
        Column(GPU_ECC, "ecc_unc_vol", ("uncorrected", "volatile"), slow=True),
        Column(GPU_ECC, "ecc_corr_agg", ("corrected", "aggregate"), slow=True),
        Column(GPU_ECC, "ecc_unc_agg", ("uncorrected", "aggregate"), slow=True),
        Column(GPU_RETIRED, "retired_sbe", ("sbe",), slow=True),
        Column(GPU_RETIRED, "retired_dbe", ("dbe",), slow=True),
        Column(GPU_RETIRED_PENDING, "retired_pending", slow=True, flag=True),
        Column(GPU_REMAPPED, "remap_corr", ("correctable",), slow=True),
        Column(GPU_REMAPPED, "remap_unc", ("uncorrectable",), slow=True),
        Column(GPU_REMAP_PENDING, "remap_pending", slow=True, flag=True),
        Column(GPU_REMAP_FAILURE, "remap_failure", slow=True, flag=True),
        Column(GPU_PCIE_REPLAY, "pcie_replay", slow=True),
        Column(GPU_NVLINK_ACTIVE, "nvlink_active", slow=True),
        Column(GPU_NVLINK_TOTAL, "nvlink_total", slow=True),
        Column(GPU_NVLINK_CRC, "nvlink_crc_rate", slow=True),
        Column(GPU_LOST, "lost", flag=True),
        Flags(GPU_REASON, "clock_reasons", CLOCK_REASONS),
        OneHot(GPU_VERDICT, "verdict", VERDICTS),
        Labelled(GPU_REASON_INFO, _reasons),
        OneHot(GPU_PROBE, "probe_verdict", PROBE_VERDICTS),
    ),
)
