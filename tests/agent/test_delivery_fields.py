"""What the delivery ledger needs from the agent, on a simulated node: PCIe link, the
enforced power limit, NVML's energy counter, and memory and processes not the renter's."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors import sim
from collectors.agent.cli import parse_args
from collectors.agent.main import run
from collectors.agent.wire import Writer
from collectors.sim.node import memory_tempdir
from tests.agent.conftest import Run
from tests.agent.sim_clock import SimClock

# The simulated job runs as this test's user, the provider's processes as root: the
# test may itself run as root, so the renter is named by its process (the job's comm).
RENTER = ("--renter-process", "python3")


@pytest.fixture
def sysfs(tmp_path: Path) -> Iterator[Path]:
    base = memory_tempdir("gpufleet-delivery-")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def fault(kind: str, at: str, **params: object) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', 'node = "node-001"', f'at = "{at}"']
    lines += [f"{k} = {v!r}".replace("'", '"') for k, v in params.items()]
    return "\n".join(lines) + "\n"


def agent(sysfs: Path, scenario: str, samples: int, *extra: str, gpus: int = 4) -> Run:
    """The real agent on a simulated node, with the renter's identity in ``extra``."""
    clock = SimClock()
    installed = sim.install(
        "node-001",
        sim.parse_scenario(scenario, "test") if scenario else None,
        gpus=gpus,
        sysfs_root=sysfs / "sys",
        clock=clock.elapsed,
        refresh_s=None,
    )
    clock.node = installed
    options = parse_args(
        ["--interval", "1", "--slow-interval", "5", "--sysfs-root", str(installed.sysfs_root),
         "--proc-root", str(installed.proc_root), "--host", "node-001",
         "--max-samples", str(samples), *extra]
    )  # fmt: skip
    stream = io.BytesIO()
    try:
        assert run(options, Writer(stream), clock, inline_events=True) == 0
    finally:
        installed.close()
    return Run(stream.getvalue().splitlines())


def test_pcie_degraded_reads_its_link_and_the_others_stay_gen5_x16(sysfs: Path) -> None:
    got = agent(sysfs, fault("pcie_degraded", "3s", gpu=1, gen=3, width=8), 11)
    before, after = got.samples[0], got.samples[10]
    link = ("pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max")
    assert [got.slow(before, 1, f) for f in link] == [5, 16, 5, 16]
    assert [got.slow(after, 1, f) for f in link] == [3, 8, 5, 16]
    assert [got.slow(after, 0, f) for f in link] == [5, 16, 5, 16]


def test_power_capped_reads_the_cap_and_draws_under_it(sysfs: Path) -> None:
    got = agent(sysfs, fault("power_capped", "3s", gpu=2, watts=400), 11)
    assert got.slow(got.samples[0], 2, "power_limit_w") == 700.0
    assert got.slow(got.samples[10], 2, "power_limit_w") == 400.0
    assert got.slow(got.samples[10], 3, "power_limit_w") == 700.0
    assert all(got.gpu(s, 2, "power_w") < 400 for s in got.samples[4:])  # type: ignore[operator]


def test_memory_reserved_is_foreign_memory_held_by_one_provider_process(sysfs: Path) -> None:
    got = agent(sysfs, fault("memory_reserved", "3s", gpu=3, gib=5), 11, *RENTER)
    before, after = got.samples[0], got.samples[10]
    assert (got.slow(before, 3, "foreign_mem_mib"), got.slow(before, 3, "foreign_procs")) == (0, 0)
    assert (got.slow(after, 3, "foreign_mem_mib"), got.slow(after, 3, "foreign_procs")) == (5120, 1)
    assert (got.slow(after, 0, "foreign_mem_mib"), got.slow(after, 0, "foreign_procs")) == (0, 0)


def test_provider_check_is_a_foreign_process_loading_every_gpu_for_its_duration(
    sysfs: Path,
) -> None:
    scenario = fault("provider_check", "0s", period="30s", duration="10s")
    got = agent(sysfs, scenario, 31, *RENTER, gpus=2)
    by_t = {round(s.t - got.samples[0].t): s for s in got.samples}
    for t in (5, 30):  # inside a check (the second one starts at 30 s)
        assert got.slow(by_t[t], 1, "foreign_procs") == 1
        assert got.gpu(by_t[t], 1, "util_gpu") == 100
    for t in (15, 20, 25):  # between checks: the check's process is gone
        assert got.slow(by_t[t], 1, "foreign_procs") == 0


def test_without_a_renter_identity_the_process_fields_are_null(sysfs: Path) -> None:
    got = agent(sysfs, fault("memory_reserved", "0s", gpu=0), 6)
    assert got.slow(got.samples[5], 0, "foreign_mem_mib") is None
    assert got.slow(got.samples[5], 0, "renter_procs") is None


def test_the_energy_counter_agrees_with_sampled_power_within_two_percent(sysfs: Path) -> None:
    got = agent(sysfs, "", 301, gpus=2)
    slow = [s for s in got.samples if s.slow is not None]
    first, last = slow[0], slow[-1]
    for gpu in (0, 1):
        counted_j = (got.slow(last, gpu, "energy_mj") - got.slow(first, gpu, "energy_mj")) / 1000  # type: ignore[operator]
        between = [s for s in got.samples if first.t <= s.t < last.t]
        sampled_j = sum(got.gpu(s, gpu, "power_w") for s in between)  # type: ignore[misc]
        assert counted_j > 0
        assert abs(counted_j - sampled_j) / sampled_j < 0.02
