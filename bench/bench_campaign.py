"""Benchmark: the acceptance campaign's controller-side CPU per fabric step at 64 nodes.

The fabric steps themselves are stubbed by recorded timings (a step answers at once
with a figure, as the SSH launcher would after the kernels ran): what is measured is
the controller's own work per step, i.e. the ladder's scheduling and bisection, the
judgment against the floor, the campaign state saved atomically to the data directory
(JSON, fsync, rename) and, once at the end, the report in all four forms. It must be
negligible beside a real step (seconds to minutes of NCCL).

Scenarios: a healthy fabric (the ladder climbs once), one slow node, and four slow
nodes (each found by bisection, the rung rerun without it).

Times are CPU seconds of this process (time.process_time), so other work on a shared
machine does not inflate them. Run: .venv/bin/python bench/bench_campaign.py [--nodes 64]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from campaign.journal import Journal
from campaign.ladder import Ladder, Purpose
from campaign.model import CampaignState, FabricStep
from campaign.render import report_html, report_junit, report_markdown
from campaign.report import report_dict
from campaign.section import AcceptanceSection
from fleet.settings.contract_section import ContractSection

RECORDED_BUSBW_GBPS = 48.0  # a healthy step's figure (recorded from a simulated run)
RECORDED_STEP_S = 30.0  # a recorded step's wall time, for the report only


class RecordedFabric:
    """Answers each step at once from the recorded figures; saves state as the engine does."""

    def __init__(self, nodes: tuple[str, ...], slow: set[str], journal: Journal) -> None:
        self.state = CampaignState(nodes, time.time(), 0.0)
        self._slow = slow
        self._journal = journal
        self.steps = 0

    async def run_step(self, nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        figure = RECORDED_BUSBW_GBPS / (8.0 if self._slow & set(nodes) else 1.0)
        step = FabricStep(purpose, nodes, "ok", figure, None, time.time(), RECORDED_STEP_S)
        self.state = replace(self.state, steps=(*self.state.steps, step))
        self._journal.save(self.state, time.time())
        self.steps += 1
        return step


def measure(nodes: int, slow: set[str], data_dir: Path) -> tuple[int, float, float]:
    """(steps, CPU ms per step, CPU ms for the report) for one campaign's ladder."""
    names = tuple(f"node-{i:03d}" for i in range(1, nodes + 1))
    fabric = RecordedFabric(names, slow, Journal(data_dir))
    started = time.process_time()
    result = asyncio.run(Ladder(fabric.run_step, 0.8, None).run(names))
    ladder_s = time.process_time() - started
    assert set(result.culprits) == slow, (sorted(result.culprits), sorted(slow))
    state = fabric.state
    for node, evidence in result.culprits.items():
        state = state.reject(node, evidence)
    state = replace(state, finished_at=time.time())
    started = time.process_time()
    report = report_dict(state, AcceptanceSection(), ContractSection())
    for render in (report_markdown, report_html, report_junit):
        render(report)
    report_s = time.process_time() - started
    return fabric.steps, 1000.0 * ladder_s / fabric.steps, 1000.0 * report_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    args = parser.parse_args()
    scenarios = {
        "healthy": set(),
        "one slow node": {f"node-{args.nodes // 3:03d}"},
        "four slow nodes": {f"node-{i:03d}" for i in (3, 17, 40, args.nodes)},
    }
    print(f"{args.nodes} nodes; CPU per step includes the state's atomic save")
    print(f"{'scenario':<18}{'steps':>6}{'CPU ms/step':>14}{'report ms':>12}")
    for name, slow in scenarios.items():
        with tempfile.TemporaryDirectory() as tmp:
            steps, per_step, report_ms = measure(args.nodes, slow, Path(tmp))
        print(f"{name:<18}{steps:>6}{per_step:>14.2f}{report_ms:>12.1f}")


if __name__ == "__main__":
    main()
