"""The custom collector on an injected registry, and what the families say."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import DuplicateTimeseries

from bench.lib.metrics_fleets import troubled_fleet
from exporter.collector import FleetCollector
from exporter.text import ExpositionRenderer, render_exposition
from exporter.xids import XidTally
from fleet.model import EventRecord, FleetSnapshot

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: bytes, family: str) -> Samples:
    """``{(sample name, sorted labels): value}`` of one family."""
    for parsed in text_string_to_metric_families(text.decode("utf-8")):
        if family in (parsed.name, f"{parsed.name}_total"):
            return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in parsed.samples}
    raise AssertionError(f"no family {family}")


def values(text: bytes, family: str, **match: str) -> list[float]:
    """Values of the samples of ``family`` whose labels include ``match``."""
    found = samples(text, family)
    return [v for (_, labels), v in found.items() if set(match.items()) <= set(labels)]


def test_importing_the_package_registers_nothing() -> None:
    code = (
        "import prometheus_client\n"
        "import exporter.collector, exporter.text, exporter.server\n"
        "import exporter.endpoint\n"
        "names = prometheus_client.REGISTRY._names_to_collectors\n"
        "print(sorted(n for n in names if n.startswith('gpufleet')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_collector_registers_on_a_fresh_registry_once() -> None:
    registry = CollectorRegistry()
    snapshot = troubled_fleet()
    registry.register(FleetCollector(lambda: snapshot))
    assert registry.get_sample_value("gpufleet_fleet_nodes") == 3.0
    with pytest.raises(DuplicateTimeseries):
        registry.register(FleetCollector(lambda: snapshot))


def test_label_values_are_escaped_and_read_back_intact() -> None:
    text = render_exposition(troubled_fleet())
    assert b'model="Odd \\"GPU\\" 100% \\\\ model\\nline2"' in text
    models = {dict(labels)["model"] for _, labels in samples(text, "gpufleet_gpu_power_watts")}
    assert 'Odd "GPU" 100% \\ model\nline2' in models


def test_absent_and_nan_values_omit_the_sample() -> None:
    snapshot = troubled_fleet()
    text = render_exposition(snapshot)
    missing = snapshot.nodes[0].gpus[1].uuid  # util and power None, temperature NaN
    for family in ("gpufleet_gpu_utilization_percent", "gpufleet_gpu_power_watts"):
        assert values(text, family, uuid=missing) == []
    assert values(text, "gpufleet_gpu_temperature_celsius", uuid=missing) == []
    assert values(text, "gpufleet_gpu_memory_used_bytes", uuid=missing) != []
    assert b"NaN" not in text and b"None" not in text


def test_verdicts_states_and_statuses_are_one_hot() -> None:
    snapshot = troubled_fleet()
    text = render_exposition(snapshot)
    lost = snapshot.nodes[1].gpus[3].uuid
    verdicts = {
        dict(labels)["verdict"]: v
        for (_, labels), v in samples(text, "gpufleet_gpu_verdict").items()
        if dict(labels)["uuid"] == lost
    }
    assert verdicts == {"ok": 0.0, "warn": 0.0, "fail": 0.0, "lost": 1.0, "unknown": 0.0}
    assert values(text, "gpufleet_node_broken", node="n2") == [1.0]
    assert values(text, "gpufleet_node_broken", node="n1") == [0.0]
    assert values(text, "gpufleet_node_state", node="n3", state="unreachable") == [1.0]
    statuses = values(text, "gpufleet_node_status", node="n3")
    assert sorted(statuses) == [0.0] * 7 + [1.0]
    assert values(text, "gpufleet_node_status", node="n3", status="unreachable") == [1.0]
    assert values(text, "gpufleet_node_up", node="n3") == [0.0]


def test_clock_reasons_one_series_per_active_reason() -> None:
    snapshot = troubled_fleet()
    gpu = replace(snapshot.nodes[0].gpus[2], clock_reasons=0x48)
    node = replace(snapshot.nodes[0], gpus=(gpu,))
    text = render_exposition(replace(snapshot, nodes=(node,)))
    active = samples(text, "gpufleet_gpu_clock_event_reason_active")
    assert sorted(dict(labels)["reason"] for _, labels in active) == [
        "hw_slowdown",
        "hw_thermal_slowdown",
    ]
    assert values(text, "gpufleet_gpu_clock_event_reasons") == [72.0]


def test_probe_verdict_only_for_probed_gpus_and_sla_only_when_configured() -> None:
    snapshot = troubled_fleet()
    text = render_exposition(snapshot)
    probed = samples(text, "gpufleet_gpu_probe_verdict")
    assert {dict(labels)["uuid"] for _, labels in probed} == {snapshot.nodes[0].gpus[0].uuid}
    assert values(text, "gpufleet_gpu_probe_verdict", verdict="straggler") == [1.0]
    assert values(text, "gpufleet_sla_availability_percent", month="2026-11") == [99.2]
    assert values(text, "gpufleet_sla_credit_owed", currency="USD") == [1234.5]
    no_sla = render_exposition(replace(snapshot, sla=None))
    assert samples(no_sla, "gpufleet_sla_availability_percent") == {}


def _with_xids(previous: FleetSnapshot, at: float, *codes: int) -> FleetSnapshot:
    events = tuple(EventRecord(t=at, node="n2", kind="xid", gpu=3, code=c) for c in codes)
    return replace(previous, taken_at=at, new_events=events)


def test_xids_between_scrapes_are_counted_once_each() -> None:
    tally = XidTally()
    renderer = ExpositionRenderer(xids=tally)
    first = troubled_fleet()  # one XID 79
    second = _with_xids(first, first.taken_at + 1, 79, 48)
    third = _with_xids(second, second.taken_at + 1, 79)
    for snapshot in (first, second, third, third):  # the runtime's listener; third twice
        tally.observe(snapshot)
    tally.observe(second)  # an older snapshot, as a slow scrape might read, counts nothing
    text = renderer.render(third)  # the scrape sees only the newest snapshot
    assert values(text, "gpufleet_gpu_xid_errors_total", node="n2", xid="79") == [3.0]
    assert values(text, "gpufleet_gpu_xid_errors_total", xid="48", gpu="3") == [1.0]
    uuid = first.nodes[1].gpus[3].uuid
    assert values(text, "gpufleet_gpu_xid_errors_total", uuid=uuid, xid="48") == [1.0]


def test_scrape_duration_reports_the_previous_scrape() -> None:
    registry = CollectorRegistry()
    snapshot = troubled_fleet()
    registry.register(FleetCollector(lambda: snapshot))
    assert samples(generate_latest(registry), "gpufleet_scrape_duration_seconds") == {}
    duration = registry.get_sample_value("gpufleet_scrape_duration_seconds")
    assert duration is not None and 0.0 < duration < 60.0
    renderer = ExpositionRenderer()
    renderer.render(snapshot)
    assert values(renderer.render(snapshot), "gpufleet_scrape_duration_seconds")[0] > 0.0


def _with_link_events(previous: FleetSnapshot, at: float, *kinds: str) -> FleetSnapshot:
    events = tuple(EventRecord(t=at, node="n2", kind=k, detail="mlx5_3/1") for k in kinds)
    return replace(previous, taken_at=at, new_events=events)


def test_link_events_are_counted_by_node_and_kind_on_both_paths() -> None:
    tally = XidTally()
    renderer = ExpositionRenderer(xids=tally)
    first = troubled_fleet()
    down = _with_link_events(first, first.taken_at + 1, "link_down", "link_downed")
    up = _with_link_events(down, down.taken_at + 1, "link_up", "link_down")
    for snapshot in (first, down, up, up):  # the last one twice: counted once
        tally.observe(snapshot)
    text = renderer.render(up)
    family = "gpufleet_link_events_total"
    assert values(text, family, node="n2", kind="link_down") == [2.0]
    assert values(text, family, node="n2", kind="link_up") == [1.0]
    assert values(text, family, node="n2", kind="link_downed") == [1.0]
    assert values(text, family, kind="nvlink_down") == []  # never seen: no series
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda: up, xids=tally))
    assert registry.get_sample_value(f"{family}", {"node": "n2", "kind": "link_down"}) == 2.0


def test_the_credit_help_says_a_tiered_credit_is_a_month_end_projection() -> None:
    # A tier's credit is a share of the whole month's bill: mid-month it is not owed yet.
    text = render_exposition(troubled_fleet()).decode()
    help_line = next(
        line for line in text.splitlines() if line.startswith("# HELP gpufleet_sla_credit_owed ")
    )
    assert "owed so far this month." not in help_line.split("pro_rata")[0]
    assert "tiered, what the month would earn at month end if availability stays" in help_line
    assert help_line.endswith("pro_rata, owed so far this month.")
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda: troubled_fleet()))
    assert help_line in generate_latest(registry).decode().splitlines()  # both paths say it
