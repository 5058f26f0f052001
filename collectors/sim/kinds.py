"""The fault kinds a scenario may declare, by what they act on (docs/simulator.md)."""

GPU_KINDS = frozenset(
    {
        "xid79",
        "ecc_dbe",
        "row_remap_pending",
        "row_remap_failure",
        "nvlink_crc_storm",
        "nvlink_down",
        "thermal_slowdown",
        "slow_gpu",
        "sdc",
        "gpu_missing",
        "memory_reserved",
        "power_capped",
        "pcie_degraded",
    }
)
PORT_KINDS = frozenset({"ib_link_down", "ib_symbol_errors", "ib_degraded_rate"})
NODE_KINDS = frozenset(
    {
        "agent_crash",
        "agent_hang",
        "node_unreachable",
        "recover",
        "provider_check",
        "reboot",
        "node_replaced",
        "slow_fabric",
        "fabric_hang",
        "job",
    }
)
KINDS = GPU_KINDS | PORT_KINDS | NODE_KINDS
