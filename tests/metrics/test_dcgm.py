"""/metrics/dcgm, /metrics/dcgm/<node> and /sd: dcgm-exporter's names, units and labels."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from bench.lib.metrics_fleets import troubled_fleet
from exporter.dcgm import DcgmExposition
from exporter.dcgm_fields import LABELS
from exporter.dcgm_sd import node_from_path, node_path
from exporter.endpoint import start_metrics_endpoint
from exporter.xids import XidTally
from fleet.model import FleetSnapshot
from tests.metrics.test_endpoint import PublishingFleet

Samples = dict[tuple[str, str, str], float]  # (metric, Hostname, gpu) -> value


def samples(body: bytes) -> Samples:
    """By family name: prometheus_client's parser appends ``_total`` to counter samples."""
    out: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[family.name, s.labels["Hostname"], s.labels["gpu"]] = s.value
    return out


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return int(err.code), b""


def test_units_are_dcgms() -> None:
    snapshot = troubled_fleet()
    gpu = snapshot.nodes[0].gpus[2]
    body = DcgmExposition(XidTally()).render(snapshot)
    assert body is not None
    got = samples(body)
    key = ("n1", "2")
    assert got[("DCGM_FI_DEV_FB_USED", *key)] == gpu.mem_used_bytes / 2**20  # MiB
    total_mib = gpu.memory_total_bytes / 2**20
    assert got[("DCGM_FI_DEV_FB_FREE", *key)] == total_mib - gpu.mem_used_bytes / 2**20
    assert got[("DCGM_FI_PROF_SM_ACTIVE", *key)] == gpu.sm_active / 100  # a ratio
    assert got[("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", *key)] == gpu.tensor_active / 100
    assert got[("DCGM_FI_DEV_SM_CLOCK", *key)] == gpu.sm_clock_mhz  # MHz
    assert got[("DCGM_FI_DEV_GPU_UTIL", *key)] == gpu.util_gpu  # percent
    assert got[("DCGM_FI_DEV_POWER_USAGE", *key)] == gpu.power_w
    assert got[("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", *key)] == gpu.ecc_corr_vol
    assert got[("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", *key)] == gpu.pcie_replay


def test_labels_are_dcgm_exporters() -> None:
    snapshot = troubled_fleet()
    node = snapshot.nodes[1]
    gpu = replace(node.gpus[5], pci_bus_id="00000000:9A:00.0")
    node = replace(node, gpus=(*node.gpus[:5], gpu, *node.gpus[6:]))
    body = DcgmExposition(XidTally()).render(replace(snapshot, nodes=(node,)), "n2")
    assert body is not None
    temp = next(
        f for f in text_string_to_metric_families(body.decode()) if f.name == "DCGM_FI_DEV_GPU_TEMP"
    )
    labels = next(s.labels for s in temp.samples if s.labels["gpu"] == "5")
    assert labels == {
        "gpu": "5",
        "UUID": gpu.uuid,
        "pci_bus_id": "00000000:9A:00.0",
        "device": "nvidia5",
        "modelName": gpu.name,
        "Hostname": "n2",
        "hostname": "n2",
        "DCGM_FI_DRIVER_VERSION": node.driver,
    }
    assert tuple(labels) == LABELS


def test_xid_errors_is_the_last_code_per_gpu() -> None:
    xids = XidTally()
    dcgm = DcgmExposition(xids)
    snapshot = troubled_fleet()  # XID 79 on n2 GPU 3
    first = dcgm.render(snapshot)
    assert first is not None
    got = samples(first)
    assert got[("DCGM_FI_DEV_XID_ERRORS", "n2", "3")] == 79
    assert got[("DCGM_FI_DEV_XID_ERRORS", "n2", "2")] == 0
    assert ("DCGM_FI_DEV_GPU_UTIL", "n2", "3") not in got  # lost: absent, never 0
    later = replace(snapshot, taken_at=snapshot.taken_at + 1)
    event = replace(snapshot.new_events[0], code=48, t=later.taken_at)
    after = dcgm.render(replace(later, new_events=(event,)))
    assert after is not None
    assert samples(after)[("DCGM_FI_DEV_XID_ERRORS", "n2", "3")] == 48


def test_one_node_alone_and_unknown_nodes() -> None:
    dcgm = DcgmExposition(XidTally())
    snapshot = troubled_fleet()
    body = dcgm.render(snapshot, "n1")
    assert body is not None
    assert {host for _, host, _ in samples(body)} == {"n1"}
    assert dcgm.render(snapshot, "nope") is None
    assert dcgm.render(None, "n1") is None
    empty = dcgm.render(None)
    assert empty is not None and b"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" in empty


def test_node_paths_round_trip() -> None:
    for name in ("gpu-001", "node.example.com", "odd name/with%"):
        assert node_from_path(node_path(name)) == name
    assert node_from_path("/metrics/dcgm") is None
    assert node_from_path("/metrics/dcgm/") is None


async def test_sd_lists_one_target_per_node_that_serves_only_it() -> None:
    fleet = PublishingFleet()
    server = await start_metrics_endpoint("127.0.0.1:0", fleet)
    try:
        status, body = await asyncio.to_thread(_get, f"{server.url}/sd")
        assert (status, json.loads(body)) == (200, [])  # before the first snapshot
        snapshot: FleetSnapshot = troubled_fleet()
        fleet.publish(snapshot)
        _, body = await asyncio.to_thread(_get, f"{server.url}/sd")
        groups = json.loads(body)
        address = f"127.0.0.1:{server.bound_port}"
        assert [g["targets"] for g in groups] == [[address]] * 3
        assert [g["labels"]["instance"] for g in groups] == ["n1", "n2", "n3"]
        for group in groups:
            node = group["labels"]["instance"]
            status, page = await asyncio.to_thread(
                _get, f"{server.url}{group['labels']['__metrics_path__']}"
            )
            assert status == 200
            hosts = {host for _, host, _ in samples(page)}
            assert hosts == ({node} if node != "n3" else set())  # n3 is unreachable
        assert (await asyncio.to_thread(_get, f"{server.url}/metrics/dcgm/nope"))[0] == 404
        status, whole = await asyncio.to_thread(_get, f"{server.url}/metrics/dcgm")
        assert status == 200 and {h for _, h, _ in samples(whole)} == {"n1", "n2"}
    finally:
        await server.stop()


def test_a_swapped_gpu_gets_its_new_labels() -> None:
    dcgm = DcgmExposition(XidTally())
    snapshot = troubled_fleet()
    node = snapshot.nodes[0]
    before = dcgm.render(snapshot, "n1")
    assert before is not None and node.gpus[4].uuid.encode() in before
    swapped = replace(node.gpus[4], uuid="GPU-new-one")
    node = replace(node, gpus=(*node.gpus[:4], swapped, *node.gpus[5:]))
    later = replace(snapshot, taken_at=snapshot.taken_at + 1, nodes=(node, *snapshot.nodes[1:]))
    after = dcgm.render(later, "n1")
    assert after is not None
    assert b'UUID="GPU-new-one"' in after and snapshot.nodes[0].gpus[4].uuid.encode() not in after
