"""The fields of dcgm-exporter's default set that gpufleet serves beside the older ones.

The oracle is dcgm-exporter's own ``etc/default-counters.csv`` (kept verbatim, with its
commit, in ``dcgm_exporter_default_counters.csv``): memory clock, memory temperature and
total energy are in its default set, with the type and unit it states. The node agent
reports them where it reads them (the energy counter as the slow field ``energy_mj``);
a snapshot without the attribute emits no series, as a failed reading does.
"""

from __future__ import annotations

from dataclasses import make_dataclass, replace
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.lib.metrics_fleets import troubled_fleet
from exporter.dcgm import DcgmExposition
from exporter.dcgm_fields import FIELDS
from exporter.xids import XidTally
from fleet.model import FleetSnapshot, GpuSnapshot

CSV = Path(__file__).with_name("dcgm_exporter_default_counters.csv")
ADDED = {
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", "(in MHz)"),
    "DCGM_FI_DEV_MEMORY_TEMP": ("memory_temp_c", "(in C)"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("energy_mj", "(in mJ)"),
}
OPT_IN = (
    "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY",
    "DCGM_FI_DEV_FABRIC_HEALTH_MASK",
)


# Readings a newer agent reports that GpuSnapshot may not have yet (energy_mj it has).
READINGS = (
    "mem_clock_mhz",
    "memory_temp_c",
    "energy_mj",
    "power_mgmt_limit_w",
    "fabric_health_summary",
    "fabric_health_mask",
)
ReportingGpu = make_dataclass(
    "ReportingGpu",
    [(n, Any, None) for n in READINGS if n not in GpuSnapshot.__dataclass_fields__],
    bases=(GpuSnapshot,),
    frozen=True,
    slots=True,
)


def default_set() -> dict[str, tuple[str, str]]:
    """Enabled rows of the CSV: field -> (type, help)."""
    rows = {}
    for line in CSV.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, kind, help_ = (part.strip() for part in line.split(",", 2))
        rows[name] = (kind, help_)
    return rows


def series(body: bytes) -> dict[tuple[str, str, str], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[family.name, s.labels["Hostname"], s.labels["gpu"]] = s.value
    return out


def with_readings(snapshot: FleetSnapshot, **values: float | int) -> FleetSnapshot:
    node = snapshot.nodes[0]
    first = node.gpus[0]
    fields: dict[str, Any] = {f: getattr(first, f) for f in GpuSnapshot.__dataclass_fields__}
    fields.update(values)
    gpus = (ReportingGpu(**fields), *node.gpus[1:])
    return replace(snapshot, nodes=(replace(node, gpus=gpus), *snapshot.nodes[1:]))


def test_the_added_fields_are_dcgm_exporters_defaults_with_its_types_and_units() -> None:
    defaults = default_set()
    served = {field.name: field for field in FIELDS}
    for name, (_, unit) in ADDED.items():
        kind, help_ = defaults[name]
        assert served[name].type == kind
        assert unit in help_ and unit.strip("()").removeprefix("in ") in served[name].help


def test_a_snapshot_without_the_readings_emits_no_series_for_them() -> None:
    body = DcgmExposition(XidTally()).render(troubled_fleet())
    assert body is not None
    names = {name for name, _, _ in series(body)}
    assert names.isdisjoint(ADDED) and names.isdisjoint(OPT_IN)
    assert "DCGM_FI_DEV_GPU_TEMP" in names  # the older fields are there


def test_readings_the_agent_reports_are_served_in_dcgms_units() -> None:
    snapshot = with_readings(
        troubled_fleet(),
        mem_clock_mhz=2619.0,
        memory_temp_c=41.0,
        energy_mj=123_456_789,
        power_mgmt_limit_w=650.0,
        fabric_health_summary=3,
        fabric_health_mask=0,
    )
    body = DcgmExposition(XidTally()).render(snapshot)
    assert body is not None
    got = series(body)
    node = snapshot.nodes[0].name
    assert got[("DCGM_FI_DEV_MEM_CLOCK", node, "0")] == 2619.0  # MHz
    assert got[("DCGM_FI_DEV_MEMORY_TEMP", node, "0")] == 41.0  # C
    # A counter: the parser names its sample ..._total; the value stays in mJ.
    assert got[("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", node, "0")] == 123_456_789
    assert got[("DCGM_FI_DEV_POWER_MGMT_LIMIT", node, "0")] == 650.0
    assert got[("DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY", node, "0")] == 3  # limited capacity
    assert got[("DCGM_FI_DEV_FABRIC_HEALTH_MASK", node, "0")] == 0
    # Only the GPU that reports them has the series.
    assert ("DCGM_FI_DEV_MEM_CLOCK", node, "1") not in got
