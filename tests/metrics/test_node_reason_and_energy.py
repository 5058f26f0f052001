"""/metrics families added from the snapshot: a node's cause-first reason when it is not
up, each GPU's energy counter, and the GPU's workload; parsed by prometheus_client."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from exporter.text import render_exposition
from fleet.model import FleetSnapshot
from testkit.snapshots import T0, demo_snapshot, lose_gpu


def _samples(body: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
        if s.name == name
    ]


def _broken_fleet() -> FleetSnapshot:
    fleet = demo_snapshot(3, faults=False)
    lost = lose_gpu(fleet.nodes[1], 5, T0 + 60)
    return replace(fleet, nodes=(fleet.nodes[0], lost, fleet.nodes[2]))


def test_a_node_that_is_not_up_has_its_cause_as_a_reason_series() -> None:
    fleet = _broken_fleet()
    reasons = _samples(render_exposition(fleet), "gpufleet_node_reason_info")
    broken = fleet.nodes[1]
    assert [(labels["node"], labels["state"], value) for labels, value in reasons] == [
        (broken.name, broken.state, 1.0)
    ]
    assert reasons[0][0]["reason"].startswith("GPU 5 lost"), reasons
    # Up again: no series at all (the family keeps only its HELP and TYPE).
    assert (
        _samples(render_exposition(demo_snapshot(3, faults=False)), "gpufleet_node_reason_info")
        == []
    )


def test_hostile_reason_text_is_cleaned_and_bounded() -> None:
    fleet = _broken_fleet()
    hostile = replace(fleet.nodes[1], broken_reasons=('GPU 5 "lost"\n\x1b[31m' + "x" * 500,))
    body = render_exposition(replace(fleet, nodes=(fleet.nodes[0], hostile, fleet.nodes[2])))
    ((labels, _),) = _samples(body, "gpufleet_node_reason_info")
    assert "\x1b" not in labels["reason"] and len(labels["reason"]) <= 120
    assert labels["reason"].startswith('GPU 5 "lost"')


def test_each_gpu_exposes_its_energy_counter_in_joules() -> None:
    fleet = demo_snapshot(1, faults=False)
    node = fleet.nodes[0]
    gpus = (replace(node.gpus[0], energy_mj=3_600_000_123), *node.gpus[1:])
    body = render_exposition(replace(fleet, nodes=(replace(node, gpus=gpus),)))
    energy = {
        labels["gpu"]: value for labels, value in _samples(body, "gpufleet_gpu_energy_joules_total")
    }
    assert energy["0"] == 3_600_000.123  # mJ / 1000; 1 kWh and 123 mJ


def test_the_jobs_on_the_snapshot_are_workload_series_on_both_paths() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from exporter.collector import FleetCollector
    from fleet.jobs import JobInterval

    fleet = demo_snapshot(1, faults=False)
    gpu = fleet.nodes[0].gpus[3]
    job = JobInterval(fleet.nodes[0].name, 3, gpu.uuid, "slurm", "4242", "0", "alice", T0)
    step = replace(job, step="1")  # two steps of one job on the GPU: one series
    with_jobs = replace(fleet, jobs=(job, step))
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda: with_jobs))
    for body in (render_exposition(with_jobs), generate_latest(registry)):
        series = _samples(body, "gpufleet_gpu_workload_info")
        assert series == [
            ({"node": job.node, "gpu": "3", "uuid": gpu.uuid, "job": "4242", "user": "alice"}, 1.0)
        ]
