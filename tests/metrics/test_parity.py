"""The fast text parses, and says exactly what the prometheus_client collector path says."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bench.lib.metrics_fleets import fleet, troubled_fleet
from exporter.catalog import FAMILIES, SCRAPE_DURATION
from exporter.collector import FleetCollector
from exporter.text import ExpositionRenderer, render_exposition
from fleet.model import FleetSnapshot

Parsed = dict[str, tuple[str, str, list[tuple[str, tuple[tuple[str, str], ...], float]]]]


def parse(text: bytes) -> Parsed:
    """Families by name: (type, help, sorted samples); the scrape duration is left out."""
    out: Parsed = {}
    for family in text_string_to_metric_families(text.decode("utf-8")):
        if family.name == SCRAPE_DURATION.name:
            continue
        # As Prometheus reads them: every value a float64 (a big integer text rounds).
        samples = sorted(
            (s.name, tuple(sorted(s.labels.items())), float(s.value)) for s in family.samples
        )
        out[family.name] = (family.type, family.documentation, samples)
    return out


def collector_text(snapshot: FleetSnapshot | None, *, raw_port_counters: bool = False) -> bytes:
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda: snapshot, raw_port_counters=raw_port_counters))
    return generate_latest(registry)


@pytest.mark.parametrize("raw", [False, True], ids=["default", "raw_port_counters"])
def test_fast_text_equals_collector_path_on_a_troubled_fleet(raw: bool) -> None:
    snapshot = troubled_fleet()
    fast = parse(render_exposition(snapshot, raw_port_counters=raw))
    assert fast == parse(collector_text(snapshot, raw_port_counters=raw))
    assert ("gpufleet_port_raw_value" in fast) is raw
    # The comparison is not vacuous: every family is there and most have samples.
    # The catalog's families and the two info families at the end (node reasons, workload).
    assert len(fast) == len(FAMILIES) - (1 if raw else 2) + 2
    assert sum(1 for _, _, samples in fast.values() if samples) >= len(fast) - 3


def test_reused_and_rebuilt_nodes_render_the_current_values() -> None:
    renderer = ExpositionRenderer()
    first = fleet(4, ports=2)
    renderer.render(first)
    same, fast_only, slow_too, swapped = first.nodes
    fast_only = replace(fast_only, gpus=(replace(fast_only.gpus[0], util_gpu=12.5),))
    slow_too = replace(slow_too, gpus=(replace(slow_too.gpus[0], ecc_corr_vol=41),))
    # A GPU swapped for another with equal slow values must not keep the old labels.
    swapped = replace(swapped, gpus=(replace(swapped.gpus[0], uuid="GPU-new"),))
    second = replace(first, nodes=(same, fast_only, slow_too, swapped))
    fast = parse(renderer.render(second))
    assert fast == parse(collector_text(second))
    util = {dict(labels)["node"]: v for _, labels, v in fast["gpufleet_gpu_utilization_percent"][2]}
    assert util["n0002"] == 12.5
    ecc = fast["gpufleet_gpu_ecc_errors"][2]
    assert ("gpufleet_gpu_ecc_errors_total", 41.0) in {
        (name, v) for name, labels, v in ecc if dict(labels)["node"] == "n0003"
    }
    total = fast["gpufleet_gpu_memory_total_bytes"][2]
    assert {dict(labels)["uuid"] for _, labels, _ in total if dict(labels)["node"] == "n0004"} == {
        "GPU-new"
    }


def test_no_snapshot_yet_gives_every_family_without_samples() -> None:
    fast = parse(render_exposition(None))
    assert fast == parse(collector_text(None))
    assert all(samples == [] for _, _, samples in fast.values())


def _value(draw: Any) -> float | None:
    return draw(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64)))


@st.composite
def odd_snapshots(draw: Any) -> FleetSnapshot:
    base = troubled_fleet()
    node = base.nodes[0]
    gpu = replace(
        node.gpus[0],
        name=draw(st.text(min_size=0, max_size=12)),
        uuid=draw(st.text(min_size=1, max_size=12)),
        util_gpu=_value(draw),
        power_w=_value(draw),
        mem_used_bytes=draw(st.one_of(st.none(), st.integers(0, 2**64))),
        clock_reasons=draw(st.one_of(st.none(), st.integers(0, 0x1FF))),
        retired_pending=draw(st.one_of(st.none(), st.booleans())),
        lost=draw(st.booleans()),
        ecc_corr_vol=draw(st.one_of(st.none(), st.integers(0, 2**64))),
        sm_clock_mhz=_value(draw),
    )
    # The other GPUs of the node stay plain: one odd value must not disturb their lines.
    return replace(base, nodes=(replace(node, gpus=(gpu, *node.gpus[1:])), *base.nodes[1:]))


@settings(max_examples=40, deadline=None)
@given(odd_snapshots())
def test_parity_holds_for_odd_labels_and_values(snapshot: FleetSnapshot) -> None:
    fast = parse(render_exposition(snapshot))
    assert fast == parse(collector_text(snapshot))
    gpu = snapshot.nodes[0].gpus[0]
    util = fast["gpufleet_gpu_utilization_percent"][2]
    shown = [v for _, labels, v in util if dict(labels)["uuid"] == gpu.uuid]
    absent = gpu.util_gpu is None or math.isnan(gpu.util_gpu)
    assert shown == ([] if absent else [gpu.util_gpu])
