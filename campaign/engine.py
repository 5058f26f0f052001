"""The campaign: its stages in order, each judged, the state saved after every step.

The stages are listed once (:data:`STAGE_ORDER`); a stage already in ``state.done`` is
not run again, so a controller restarted after SIGKILL continues where it stopped.
Each stage only ever narrows the nodes it hands on (``state.active()``): a node
rejected at inventory never runs a kernel, and nothing runs on a node the campaign
was not given.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol

from campaign.health_gate import health_findings
from campaign.inventory import inventory_findings
from campaign.journal import Journal
from campaign.ladder import Ladder, Purpose
from campaign.model import CampaignState, Evidence, FabricStep, Stage, TimelineEntry
from campaign.section import AcceptanceSection
from fleet.model import FleetSnapshot, NodeSnapshot
from fleet.settings.contract_section import ContractSection
from probes.report import ProbeReport

StateListener = Callable[[CampaignState], None]
# Measured compute figures the probe suite reports, best first: TF32 on a GPU, FP32 on a CPU.
TFLOPS_METRICS = ("tf32", "fp32")


class CampaignPorts(Protocol):
    """What the campaign needs of the world: the monitor, the probes, the fabric."""

    async def fleet(self, nodes: Sequence[str]) -> FleetSnapshot:
        """The monitor's view once every node in ``nodes`` was sampled (or waited out)."""
        ...

    def latest(self) -> FleetSnapshot | None:
        """The monitor's latest view."""
        ...

    async def probe(self, nodes: Sequence[str]) -> Sequence[ProbeReport]:
        """The probe suite on ``nodes``, judged as one fleet."""
        ...

    async def run_step(self, nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        """One all-reduce across ``nodes``."""
        ...


class Campaign:
    """Runs the stages of one campaign over ``ports``."""

    def __init__(
        self,
        ports: CampaignPorts,
        settings: AcceptanceSection,
        contract: ContractSection,
        journal: Journal | None,
        clock: Callable[[], float] = time.time,
        on_change: StateListener | None = None,
    ) -> None:
        self._ports = ports
        self._settings = settings
        self._contract = contract
        self._journal = journal
        self._clock = clock
        self._on_change = on_change
        self.state: CampaignState | None = None
        self._ladder_base: CampaignState | None = None  # the state the ladder's steps extend

    async def run(self, state: CampaignState) -> CampaignState:
        """Run every stage not yet done; returns the finished state."""
        self._set(state)
        for stage, run_stage in self._stages():
            if stage in state.done:
                continue
            began = self._clock()
            state = await run_stage(state)
            entry = TimelineEntry(stage, began, self._clock(), _stage_note(state, stage))
            state = replace(state, done=(*state.done, stage), timeline=(*state.timeline, entry))
            self._set(state)
        state = replace(state, finished_at=self._clock())
        self._set(state)
        return state

    def _stages(self) -> list[tuple[Stage, Callable[[CampaignState], Awaitable[CampaignState]]]]:
        return [
            ("inventory", self._inventory),
            ("health", self._health),
            ("probes", self._probes),
            ("fabric", self._fabric),
            ("soak", self._soak),
        ]

    def _set(self, state: CampaignState) -> None:
        self.state = state
        if self._journal is not None:
            self._journal.save(state, self._clock())
        if self._on_change is not None:
            self._on_change(state)

    async def _inventory(self, state: CampaignState) -> CampaignState:
        snapshot = await self._ports.fleet(state.active())
        for node in state.active():
            seen = _node(snapshot, node)
            if seen is None or seen.sampled_at is None:
                why = seen.status_reason if seen is not None else "not in the monitor's view"
                state = state.reject(node, Evidence("inventory", "unreachable", why or "no sample"))
                continue
            for evidence in inventory_findings(seen, self._contract):
                state = state.reject(node, evidence)
        return state

    async def _health(self, state: CampaignState) -> CampaignState:
        snapshot = self._ports.latest()
        for node in state.active():
            seen = _node(snapshot, node)
            for evidence in health_findings(seen, "health") if seen is not None else ():
                state = state.reject(node, evidence)
        return state

    async def _probes(self, state: CampaignState) -> CampaignState:
        reports = await self._ports.probe(state.active())
        for report in reports:
            for evidence in probe_findings(report):
                state = state.reject(report.node, evidence)
        return replace(state, tflops_per_gpu=measured_tflops(reports))

    async def _fabric(self, state: CampaignState) -> CampaignState:
        stated = self._stated_denominator()
        ladder = Ladder(self._run_step_saving, self._settings.fabric_fraction, stated)
        self._ladder_base = state
        result = await ladder.run(state.active())
        assert self._ladder_base is not None
        state = replace(
            self._ladder_base,
            denominator="contract" if stated is not None else "measured",
            denominator_gbps=result.denominator_gbps,
        )
        for node, evidence in result.culprits.items():
            state = state.reject(node, evidence)
        return state

    async def _run_step_saving(self, nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        step = await self._ports.run_step(nodes, purpose)
        assert self._ladder_base is not None
        self._ladder_base = replace(self._ladder_base, steps=(*self._ladder_base.steps, step))
        self._set(self._ladder_base)
        return step

    def _stated_denominator(self) -> float | None:
        """The contract's per-GPU network line rate in GB/s, when the config asks for it."""
        c = self._contract
        if self._settings.fabric_denominator != "contract" or c.network_rate_gbps is None:
            return None
        ports = c.network_ports or c.gpus_per_node
        return c.network_rate_gbps * ports / c.gpus_per_node / 8.0

    async def _soak(self, state: CampaignState) -> CampaignState:
        since = _soak_start(state) or self._clock()
        if _soak_start(state) is None:
            state = replace(state, timeline=(*state.timeline, TimelineEntry("soak-start", since)))
            self._set(state)
        while state.soak_done_s < state.soak_s and len(state.active()) >= 1:
            began = self._clock()
            nodes = state.active()
            step = await self._ports.run_step(nodes, "soak") if len(nodes) >= 2 else None
            state = self._soak_verdicts(state, since)
            done = state.soak_done_s + (self._clock() - began)
            steps = state.steps if step is None else (*state.steps, step)
            state = replace(state, soak_done_s=min(state.soak_s, done), steps=steps)
            self._set(state)
        return self._soak_verdicts(state, since)

    def _soak_verdicts(self, state: CampaignState, since: float) -> CampaignState:
        snapshot = self._ports.latest()
        for node in state.active():
            seen = _node(snapshot, node)
            for evidence in health_findings(seen, "soak", since) if seen is not None else ():
                state = state.reject(node, evidence)
        return state


def probe_findings(report: ProbeReport) -> list[Evidence]:
    """A node's probe run as evidence: an error, or each GPU not judged ``pass``."""
    if report.status in ("error", "timeout", "cancelled"):
        return [Evidence("probes", f"probe_{report.status}", report.error or report.status)]
    found = []
    for verdict in report.verdicts:
        if verdict.verdict == "pass":
            continue
        figure = next(
            (
                m
                for m in report.measurements
                if m.gpu == verdict.gpu and m.verdict == verdict.verdict
            ),
            None,
        )
        found.append(
            Evidence(
                "probes",
                verdict.verdict,
                f"GPU {verdict.gpu}: " + ("; ".join(verdict.reasons) or verdict.verdict),
                measured=figure.value if figure is not None else None,
                gpu=verdict.gpu,
                at=report.finished,
            )
        )
    return found


def measured_tflops(reports: Sequence[ProbeReport]) -> float | None:
    """Median measured GEMM TFLOPS per GPU (TF32 where measured, else FP32)."""
    for metric in TFLOPS_METRICS:
        values = [
            m.value
            for r in reports
            for m in r.measurements
            if m.probe == "gemm" and m.metric == metric and m.value is not None
        ]
        if values:
            return statistics.median(values)
    return None


def _node(snapshot: FleetSnapshot | None, name: str) -> NodeSnapshot | None:
    if snapshot is None:
        return None
    return next((n for n in snapshot.nodes if n.name == name), None)


def _soak_start(state: CampaignState) -> float | None:
    return next((t.started_at for t in state.timeline if t.what == "soak-start"), None)


def _stage_note(state: CampaignState, stage: Stage) -> str:
    rejected = sum(1 for items in state.rejected.values() if items and items[0].stage == stage)
    return f"{rejected} rejected" if rejected else ""
