"""Each simulator kind, from the real agent through the fleet state and the history
recorder to the delivery ledger: exactly its deviation interval, and nothing else."""

from __future__ import annotations

import io
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from collectors import sim
from collectors.agent.cli import parse_args
from collectors.agent.main import run
from collectors.agent.wire import Writer
from collectors.protocol import Sample, decode_line
from collectors.sim.node import memory_tempdir
from collectors.updates import NodeMessage, NodeStatusChange
from fleet.settings.contract_section import ContractSection
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from history import HistoryRecorder
from history.reader import HistoryReader
from history.section import HistorySection
from ledger.delivery.ledger import DeliveryLedger, build_ledger, period_of
from ledger.delivery.section import EnergySection
from tests.agent.sim_clock import WALL_START, SimClock

NODE = "node-001"
START_MS = int(WALL_START * 1000)  # a whole minute
MINUTES = 10
CONTRACT = ContractSection(
    gpu_model="H100 80GB", gpus_per_node=2, usable_memory_gib=79, power_limit_w=700,
    pcie_gen=5, pcie_width=16, nvlinks_up=18, network_ports=8, network_rate_gbps=400,
    driver_min="550.54", driver_max="570.999", gpu_hour_price=Decimal("2.00"),
)  # fmt: skip


@pytest.fixture
def base() -> Iterator[Path]:
    path = memory_tempdir("gpufleet-delivery-sim-")
    yield path
    __import__("shutil").rmtree(path, ignore_errors=True)


def fault(kind: str, at: str, **params: object) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', f'node = "{NODE}"', f'at = "{at}"']
    lines += [f"{k} = {v!r}".replace("'", '"') for k, v in params.items()]
    return "\n".join(lines) + "\n"


def agent_lines(base: Path, scenario: str) -> list[bytes]:
    clock = SimClock()
    node = sim.install(
        NODE, sim.parse_scenario(scenario, "test") if scenario else None, gpus=2,
        sysfs_root=base / "sys", clock=clock.elapsed, refresh_s=None,
    )  # fmt: skip
    clock.node = node
    options = parse_args(
        ["--interval", "1", "--slow-interval", "10", "--sysfs-root", str(node.sysfs_root),
         "--proc-root", str(node.proc_root), "--renter-process", "python3", "--host", NODE,
         "--max-samples", str(MINUTES * 60 + 1)]
    )  # fmt: skip
    stream = io.BytesIO()
    try:
        assert run(options, Writer(stream), clock, inline_events=True) == 0
    finally:
        node.close()
    return stream.getvalue().splitlines()


def ledger_of(base: Path, scenario: str, contract: ContractSection = CONTRACT) -> DeliveryLedger:
    """Record the node's ten minutes and judge them."""
    data_dir = base / "history"
    state = FleetState([NodeSpec(NODE, expected_gpus=2)], HealthSection())
    state.ingest(NodeStatusChange(NODE, "streaming", "", WALL_START))
    now = [WALL_START]
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: now[0])
    for line in agent_lines(base, scenario):
        message = decode_line(line)
        state.ingest(NodeMessage(NODE, message, message.t))
        if isinstance(message, Sample):
            now[0] = message.t
            recorder.record(state.snapshot(message.t))
    recorder.close()
    end_ms = START_MS + MINUTES * 60_000
    period = period_of(START_MS, end_ms)
    return build_ledger(HistoryReader(data_dir), period, contract, EnergySection(), end_ms)


def deviations(ledger: DeliveryLedger) -> list[tuple[object, ...]]:
    return [
        (d.node, d.gpu if d.port is None else d.port, d.kind, (d.start_ms - START_MS) // 1000,
         (d.end_ms - START_MS) // 1000, d.measured, d.contracted)
        for d in ledger.deviations
    ]  # fmt: skip


# Each fault holds from 3 min to 6 min (a recover of its kind); a minute's row is its last
# slow reading (at :50), so the interval is exactly [180 s, 360 s).
@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        ("power_capped", {"gpu": 1, "watts": 500}, [(1, "power_limit", 500.0, 700.0)]),
        ("pcie_degraded", {"gpu": 0, "gen": 4, "width": 16}, [(0, "pcie_gen", 4.0, 5.0)]),
        ("pcie_degraded", {"gpu": 1, "gen": 5, "width": 8}, [(1, "pcie_width", 8.0, 16.0)]),
        # 81,559 MiB less 5 GiB held by the provider: 74.65 GiB usable.
        ("memory_reserved", {"gpu": 0, "gib": 5.0}, [(0, "usable_memory", 74.65, 79.0)]),
        ("nvlink_down", {"gpu": 1, "link": 3}, [(1, "nvlink_up", 17.0, 18.0)]),
        # A port down is the node's: 7 of its 8 ports active.
        ("ib_link_down", {"port": 2}, [(None, "network_ports", 7.0, 8.0)]),
        ("ib_degraded_rate", {"port": 5}, [("mlx5_5/1", "network_rate", 200.0, 400.0)]),
    ],
)  # fmt: skip
def test_each_kind_gives_exactly_its_deviation_interval(
    base: Path, kind: str, params: dict[str, object], expected: list[tuple[int, str, float, float]]
) -> None:
    scenario = fault(kind, "3m", **params) + fault("recover", "6m", kinds=[kind])
    wanted = [
        (NODE, gpu, k, 180, 360, measured, contracted) for gpu, k, measured, contracted in expected
    ]
    assert deviations(ledger_of(base, scenario)) == wanted


def test_a_slow_fabric_is_the_campaign_s_finding_not_a_reading_of_the_node(base: Path) -> None:
    # The kind slows collectives between nodes; no port, link or GPU reading changes.
    scenario = fault("slow_fabric", "3m") + fault("recover", "6m", kinds=["slow_fabric"])
    assert deviations(ledger_of(base, scenario)) == []


def test_a_gpu_missing_from_the_start_is_a_gpu_count_deviation_all_period(base: Path) -> None:
    # NVML enumerates at init: a GPU missing then stays missing until a reboot.
    ledger = ledger_of(base, fault("gpu_missing", "0s", gpu=1))
    assert deviations(ledger) == [(NODE, None, "gpu_count", 0, 600, 1.0, 2.0)]
    assert ledger.deviations[0].gpus == 1


def test_the_recorded_driver_and_model_are_judged_against_the_contract(base: Path) -> None:
    # The simulated node runs driver 570.124.06 on NVIDIA H100 80GB HBM3 GPUs: a contract
    # for A100s on 535 drivers finds each GPU's model and the node's driver all period.
    contract = CONTRACT.model_copy(
        update={"gpu_model": "A100", "driver_min": None, "driver_max": "535.999"}
    )
    name = "NVIDIA H100 80GB HBM3"
    assert deviations(ledger_of(base, "", contract)) == [
        (NODE, None, "driver", 0, 600, "570.124.06", "*..535.999"),
        (NODE, 0, "gpu_model", 0, 600, name, "A100"),
        (NODE, 1, "gpu_model", 0, 600, name, "A100"),
    ]


def test_a_healthy_node_has_no_deviation_and_no_provider_time(base: Path) -> None:
    ledger = ledger_of(base, "")
    assert ledger.deviations == []
    classes = ledger.nodes[0].by_class()
    assert classes["provider"] == 0 and classes["broken"] == 0


def test_provider_check_is_provider_time_not_working_and_not_downtime(base: Path) -> None:
    # Checks run 0-120 s and 240-360 s of every 240 s: minutes 0, 1, 4, 5, 8, 9.
    ledger = ledger_of(base, fault("provider_check", "0s", period="4m", duration="2m"))
    node = ledger.nodes[0]
    assert node.by_class()["broken"] == 0 and node.by_class()["unmonitored"] == 0
    # Where the renter's job shared a GPU with the check, the check's 4 GiB was memory the
    # renter could not use: a shortfall inside a check window, and nothing else.
    windows = [(0, 120), (240, 360), (480, 600)]
    for _, _, kind, start, end, measured, _ in deviations(ledger):
        assert (kind, measured) == ("usable_memory", 75.65)
        assert any(lo <= start and end <= hi for lo, hi in windows)  # type: ignore[operator]
    provider = node.by_class()["provider"]
    assert provider > 0
    # Every provider GPU-minute lies inside a check; the renter's job, where it shares the
    # GPU, keeps its minutes working.
    assert provider <= 2 * 6 * 60_000
