"""The tick pipeline: the identity contract through every stage, and slow work off the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from fleet.drift import DriftTracker
from fleet.link_events import LinkEventDiffer
from fleet.model import FleetSnapshot, SlaSummary
from fleet.pipeline import TickPipeline
from fleet.xid import XidRepeatFilter
from gpufleet.config import parse_config
from gpufleet.probing import FleetProber
from gpufleet.runtime import FleetRuntime
from history import HistoryRecorder
from history.ledger import LedgerInputs
from history.section import HistorySection
from ledger.sla import sla_summary
from ledger.sla.section import SlaSection
from tests.fleet.feed import NodeFeed, started_fleet


class Tick:
    """A pipeline wired as the runtime wires it, from real parts, and what it recorded."""

    def __init__(self, *feeds: NodeFeed) -> None:
        self.state = started_fleet(*feeds)
        self.history = HistoryRecorder(None, HistorySection())
        self.prober = FleetProber([], SshOptions(), parse_config({}).probes.settings(), None)
        self.recorded: list[FleetSnapshot] = []
        xids = XidRepeatFilter()
        self.pipeline = TickPipeline(
            self.state,
            DriftTracker(None),
            LinkEventDiffer(),
            probe_verdicts=self.prober.decorate,
            record=self._record(xids),
            figures=self._figures,
        )

    def _record(self, xids: XidRepeatFilter) -> Callable[[FleetSnapshot], None]:
        def record(snapshot: FleetSnapshot) -> None:
            self.recorded.append(snapshot)
            self.history.record(xids.for_history(snapshot))

        return record

    def _figures(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        return replace(snapshot, utilization=self.history.utilization_summary(snapshot.taken_at))


def test_a_tick_with_no_new_data_publishes_the_same_node_and_gpu_objects() -> None:
    a, b = NodeFeed("gpu-001"), NodeFeed("gpu-002")
    tick = Tick(a, b)
    tick.prober.verdicts[("gpu-002", 3)] = "slow"  # a probed node: a stage changes it
    first = tick.pipeline.run(a.t)
    gpus = [node.gpus for node in first.nodes]
    second = tick.pipeline.run(a.t + 0.5)
    assert second.nodes is first.nodes
    assert [node.gpus for node in second.nodes] == gpus
    assert all(x is y for node, old in zip(second.nodes, gpus, strict=True)
               for x, y in zip(node.gpus, old, strict=True))  # fmt: skip
    assert second.nodes[1].gpus[3].probe_verdict == "slow"


def test_a_changed_node_is_a_new_object_and_the_others_stay() -> None:
    a, b = NodeFeed("gpu-001"), NodeFeed("gpu-002")
    tick = Tick(a, b)
    first = tick.pipeline.run(a.t)
    a.fast[0]["util_gpu"] = 99
    tick.state.ingest(a.sample())
    second = tick.pipeline.run(a.t)
    assert second.nodes is not first.nodes
    assert second.nodes[0] is not first.nodes[0]
    assert second.nodes[0].gpus[0] is not first.nodes[0].gpus[0]
    assert second.nodes[0].gpus[0].util_gpu == 99
    assert second.nodes[1] is first.nodes[1]


def test_history_records_the_nodes_that_are_published() -> None:
    a = NodeFeed("gpu-001")
    tick = Tick(a)
    tick.prober.verdicts[("gpu-001", 0)] = "straggler"
    published = tick.pipeline.run(a.t)
    (recorded,) = tick.recorded
    assert recorded.nodes is published.nodes
    assert recorded.nodes[0].gpus[0].probe_verdict == "straggler"
    assert published.utilization.now == tick.history.utilization_summary(a.t).now


def contract() -> SlaSection:
    return SlaSection.model_validate({"committed_nodes": 1, "gpu_hour_price": 2})


async def test_a_slow_sla_refresh_leaves_the_event_loop_free(tmp_path: Path) -> None:
    """The refresh waits for the loop to run a callback: on the loop it would wait in vain."""
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []

    def slow_summary(source: LedgerInputs | Path, sla: SlaSection, now: float) -> SlaSummary:
        entered.set()
        # Set by a callback of the event loop: it runs only while the loop is free.
        released.append(release.wait(timeout=5.0))
        return sla_summary(source, sla, now)

    config = parse_config({"fleet": {"hosts": ["gpu-001"]}, "sla": contract().model_dump()})
    runtime = FleetRuntime(
        config, [NodeTarget("gpu-001", "127.0.0.1")], data_dir=None, sla_summary=slow_summary
    )
    asyncio.get_running_loop().call_soon(release.set)
    first = runtime.tick(1_000.0)
    summary = await runtime.sla_refreshed()
    assert entered.is_set() and released == [True]
    assert first.sla is None  # the refresh had started; its figures come with a later tick
    assert summary is not None and runtime.tick(1_001.0).sla is summary
    await runtime.stop()
