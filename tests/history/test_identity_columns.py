"""Each GPU's serial and PCI bus id are recorded in ``gpu_minutes``, and the SLA
evidence bundle names the outage's board by them (docs/history.md, docs/sla.md)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path

from fleet.model import FleetSnapshot, NodeSnapshot
from history import HistoryRecorder
from history.layout import GPU_MINUTES, read_table
from history.section import HistorySection
from testkit.synthetic_history import snapshot
from tests.sla.test_claim_bundle import CONTRACT, T0, XID


def _serial(node: str, gpu: int) -> str:
    return f"1654{node[-2:]}{gpu:07d}"


def _bus(gpu: int) -> str:
    return f"00000000:{0x18 + gpu:02X}:00.0"


def _identified(snap: FleetSnapshot) -> FleetSnapshot:
    def node(n: NodeSnapshot) -> NodeSnapshot:
        gpus = tuple(
            replace(g, serial=_serial(n.name, g.index), pci_bus_id=_bus(g.index)) for g in n.gpus
        )
        return replace(n, gpus=gpus)

    return replace(snap, nodes=tuple(node(n) for n in snap.nodes))


def _record(data_dir: Path) -> None:
    """As tests/sla/test_claim_bundle.py, every GPU with a serial and a bus id."""
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    for k in range(240):

        def state(n: int, k: int = k) -> str:
            return "broken" if n == 1 and 60 <= k < 120 else "up"

        events = [XID] if k == 59 else []
        snap = snapshot(T0 + 30 * k, 2, states=state, events=events)  # type: ignore[arg-type]
        recorder.record(_identified(snap))
    recorder.close()


def test_gpu_minutes_hold_serial_and_bus_id_and_the_bundle_names_them(tmp_path: Path) -> None:
    from gpufleet.cli import main

    data_dir = tmp_path / "data"
    _record(data_dir)
    minutes = read_table(data_dir, GPU_MINUTES)
    row = minutes.filter((minutes["node"] == XID.node) & (minutes["gpu"] == 3)).row(0, named=True)
    assert (row["serial"], row["pci_bus_id"]) == (_serial(XID.node, 3), "00000000:1B:00.0")
    config = tmp_path / "gpufleet.toml"
    config.write_text(CONTRACT, encoding="utf-8")
    out = tmp_path / "claim.zip"
    args = ["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09"]
    assert main([*args, "--bundle", str(out)]) == 0
    with zipfile.ZipFile(out) as archive:
        causes = json.loads(archive.read("evidence/causes.json"))
    (cause,) = causes["outages"]
    gpu = cause["gpu"]
    assert (gpu["index"], gpu["uuid"]) == (3, "GPU-0001-3")
    assert (gpu["serial"], gpu["pci_bus_id"]) == (_serial(XID.node, 3), "00000000:1B:00.0")
    assert "missing" not in gpu
