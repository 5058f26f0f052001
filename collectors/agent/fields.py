"""Field order of protocol v1, shared by the node agent and the controller's decoder.

This module runs on the node (Python 3.8, standard library only): keep it free of
newer syntax. Samples carry values as arrays in exactly these orders; ``hello``
repeats the lists so a controller never guesses.
"""

from typing import Optional

PROTOCOL_VERSION = 1

# Per GPU, every interval (default 1 s). Units are in the names; a failed field is null.
GPU_FIELDS = (
    "util_gpu",  # % of time a kernel ran (nvmlDeviceGetUtilizationRates.gpu)
    "util_mem",  # % of time memory was read or written
    "sm_active",  # % of SMs busy (GPM SM_UTIL); null where GPM is unsupported
    "tensor_active",  # % tensor pipe busy (GPM ANY_TENSOR_UTIL); null where unsupported
    "mem_used_mib",  # MiB used (v2 memory info)
    "power_w",  # W, 1-s average where the GPU reports one (one decimal)
    "temp_c",  # GPU temperature, C
    "sm_clock_mhz",  # SM clock, MHz
    # clock-event-reasons bitmask; 0x8 HW slowdown, 0x40 HW thermal, 0x80 power brake
    "clock_reasons",
    "pstate",  # performance state 0-15
)

# Per GPU, every slow interval (default 10 s): cumulative counters and reliability state.
GPU_SLOW_FIELDS = (
    "ecc_corr_vol",  # corrected ECC, volatile (since driver load)
    "ecc_unc_vol",  # uncorrected ECC, volatile
    "ecc_corr_agg",  # corrected ECC, aggregate (device lifetime)
    "ecc_unc_agg",  # uncorrected ECC, aggregate
    "retired_sbe",  # retired pages, multiple single-bit cause
    "retired_dbe",  # retired pages, double-bit cause
    "retired_pending",  # 1 when a page retirement waits for a reboot
    "remap_corr",  # remapped rows, correctable cause
    "remap_unc",  # remapped rows, uncorrectable cause
    "remap_pending",  # 1 when a remap waits for a GPU reset
    "remap_failure",  # 1 when a remap has failed
    "pcie_replay",  # PCIe replay counter (FI 94)
    "recovery_action",  # FI 230: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset
    "nvlink_active",  # links in state enabled
    "nvlink_total",  # links the GPU has
    "nvlink_replay",  # sum over links of DL replay (FI 52)
    "nvlink_recovery",  # sum over links of DL recovery (FI 59)
    "nvlink_crc_flit",  # sum over links of CRC flit errors (FI 38)
    "nvlink_crc_data",  # sum over links of CRC data errors (FI 45)
    "power_limit_w",  # enforced power limit, W
    # Appended later (additive: the controller reads fields by name, never by position).
    "pcie_gen",  # current PCIe link generation (nvmlDeviceGetCurrPcieLinkGeneration)
    "pcie_gen_max",  # the most the GPU and slot support (nvmlDeviceGetMaxPcieLinkGeneration)
    "pcie_width",  # current PCIe link width, lanes
    "pcie_width_max",  # the widest the GPU and slot support
    "energy_mj",  # NVML total energy counter, mJ since the driver loaded (Volta and newer)
    # Compute processes on the GPU (nvmlDeviceGetComputeRunningProcesses + /proc), judged
    # against the renter identity the agent was given; null when it was given none.
    "foreign_mem_mib",  # MiB held by processes that are not the renter's
    "foreign_procs",  # how many such processes
    "renter_procs",  # how many of the renter's processes
    # Read for DCGM-named exports (/metrics/dcgm); null where the GPU cannot say.
    "mem_clock_mhz",  # memory clock, MHz (nvmlDeviceGetClockInfo, NVML_CLOCK_MEM)
    "memory_temp_c",  # HBM temperature, C (FI 82, NVML_FI_DEV_MEMORY_TEMP)
    "power_mgmt_limit_w",  # power management limit, W (nvmlDeviceGetPowerManagementLimit)
    "fabric_health_summary",  # 0 n/a, 1 healthy, 2 unhealthy, 3 limited capacity (GPU fabric)
    "fabric_health_mask",  # the fabric's health bits (nvmlDeviceGetGpuFabricInfoV)
)

# Per link inside ``links`` on slow samples: [state, replay, recovery, crc_flit, crc_data].
NVLINK_FIELDS = ("state", "replay", "recovery", "crc_flit", "crc_data")

# Per InfiniBand / RoCE / EFA port, every interval. Counters are raw sysfs values.
PORT_FIELDS = (
    "state",  # IB port state code: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
    "phys_state",  # IB physical state code, see IB_PHYS_STATES (5 LinkUp)
    "rate_gbps",  # from the rate file, e.g. 400.0
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_wait",
    "port_xmit_data",  # octets / 4: bytes = value x 4
    "port_rcv_data",  # octets / 4
    "port_xmit_packets",
    "port_rcv_packets",
    # Appended later (additive: the controller reads fields by name, never by position).
    "port_rcv_discards",  # only some kernels and drivers serve it; null elsewhere
    "unicast_xmit_packets",  # 64-bit, only where the HCA has extended counters
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
)

# Data and packet counters whose width depends on the HCA: 64 bits with the extended
# PortCounters (PMA ClassPortInfo capability EXT_WIDTH), else 32 (kernel
# drivers/infiniband/core/sysfs.c, get_counter_table). ``PortInfo.data_bits`` says which.
DATA_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")

# Bit width of each PMA counter: they clamp at all ones instead of wrapping.
PORT_COUNTER_BITS = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
    "port_xmit_data": 64,
    "port_rcv_data": 64,
    "port_xmit_packets": 64,
    "port_rcv_packets": 64,
    "unicast_xmit_packets": 64,
    "unicast_rcv_packets": 64,
    "multicast_xmit_packets": 64,
    "multicast_rcv_packets": 64,
}


def counter_bits(name: str, data_bits: Optional[int] = None) -> Optional[int]:
    """The width of a port counter on one HCA: ``data_bits`` for the data counters."""
    if data_bits in (32, 64) and name in DATA_COUNTERS:
        return data_bits
    return PORT_COUNTER_BITS.get(name)


# Per Ethernet NIC (RoCE netdevs and plain NICs), every interval, from /sys/class/net.
NIC_FIELDS = (
    "up",  # 1 when operstate is "up"
    "speed_mbps",
    "carrier_changes",
    "rx_bytes",
    "tx_bytes",
    "rx_errors",
    "rx_crc_errors",
    "rx_dropped",
    "rx_missed_errors",
    "tx_errors",
    "tx_dropped",
    "tx_carrier_errors",
)

IB_PORT_STATES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
IB_PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}
