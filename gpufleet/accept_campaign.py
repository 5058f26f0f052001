"""The acceptance campaign run by ``gpufleet accept`` (gpufleet/commands/accept.py).

Kept apart from the command's parser so that the CLI, and every other command, does
not import the campaign's modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign.engine import Campaign, StateListener
from campaign.fabric_launch import FabricLauncher, FabricOptions
from campaign.journal import Journal, JournalError, open_campaign
from campaign.ladder import Purpose
from campaign.model import CampaignState, FabricStep
from campaign.render import report_html, report_junit, report_markdown
from campaign.report import EXIT_COULD_NOT_RUN, exit_status, report_dict
from collectors.ssh import NodeTarget, SshOptions, connect_node
from fleet.model import FleetSnapshot
from fleet.settings.contract_section import ContractSection
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime
from gpufleet.session import fail
from probes.report import ProbeReport

EXIT_INTERRUPTED = 130
# How long inventory waits for every node's first sample before judging the silent ones.
FIRST_SAMPLE_WAIT_S = 120.0


@dataclass
class RuntimePorts:
    """The campaign's ports over a running ``FleetRuntime`` and a fabric launcher."""

    runtime: FleetRuntime
    launcher: FabricLauncher
    targets: dict[str, NodeTarget]
    probe_concurrency: int = 8

    async def fleet(self, nodes: Sequence[str]) -> FleetSnapshot:
        wanted = set(nodes)
        seen = asyncio.Event()
        unsubscribe = self.runtime.subscribe(lambda _: seen.set())
        deadline = time.monotonic() + FIRST_SAMPLE_WAIT_S
        try:
            while not _all_sampled(self.runtime.latest(), wanted):
                seen.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(seen.wait(), max(0.0, deadline - time.monotonic()))
                if time.monotonic() >= deadline:
                    break
        finally:
            unsubscribe()
        snapshot = self.runtime.latest()
        return snapshot if snapshot is not None else FleetSnapshot(time.time(), ())

    def latest(self) -> FleetSnapshot | None:
        return self.runtime.latest()

    async def probe(self, nodes: Sequence[str]) -> Sequence[ProbeReport]:
        chosen = [self.targets[n] for n in nodes]
        runner = self.runtime.prober.runner
        # The campaign's straggler rule: [acceptance] straggler_fraction over [probes]'.
        runner.settings = dataclasses.replace(
            runner.settings, straggler_fraction=self.runtime.config.acceptance.straggler_fraction
        )
        suite = self.runtime.config.probes.suite
        return await runner.run_fleet(chosen, suite, concurrency=self.probe_concurrency)

    async def run_step(self, nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        return await self.launcher.run_step(nodes, purpose)


def _all_sampled(snapshot: FleetSnapshot | None, wanted: set[str]) -> bool:
    if snapshot is None:
        return False
    sampled = {n.name for n in snapshot.nodes if n.sampled_at is not None and n.gpus}
    return wanted <= sampled


async def accept(
    config: Config,
    targets: Sequence[NodeTarget],
    options: SshOptions,
    data_dir: Path,
    soak_s: float,
    *,
    fresh: bool = False,
    fabric: FabricOptions | None = None,
    probe_concurrency: int = 8,
    on_change: StateListener | None = None,
    out: Any = None,
) -> int:
    """Run (or resume) the campaign on ``targets``; write the reports; the exit status."""
    out = out or sys.stdout
    journal = Journal(data_dir)
    start = CampaignState(
        tuple(t.name for t in targets), time.time(), soak_s, config.acceptance.fabric_denominator
    )
    try:
        state = start if fresh else open_campaign(journal, start, time.time())
    except JournalError as exc:
        return fail(str(exc))
    runtime = FleetRuntime(config, targets, data_dir=data_dir, ssh_options=options)
    launcher = FabricLauncher(
        targets,
        lambda t: connect_node(t, options),
        fabric or fabric_options(config, targets),
    )
    ports = RuntimePorts(runtime, launcher, {t.name: t for t in targets}, probe_concurrency)
    campaign = Campaign(ports, config.acceptance, contract_of(config), journal, on_change=on_change)
    status = await _run_interruptible(campaign, runtime, launcher, state)
    final = campaign.state or state
    report = report_dict(final, config.acceptance, contract_of(config))
    paths = write_reports(report, journal.directory)
    print(report_markdown(report), file=out, end="")
    print(f"reports: {', '.join(str(p) for p in paths)}", file=out)
    return status if status is not None else exit_status(report)


def contract_of(config: Config) -> ContractSection:
    """The configured contract; without one, its defaults (8 GPUs per node, nothing else)."""
    return config.contract or ContractSection()


def fabric_options(config: Config, targets: Sequence[NodeTarget]) -> FabricOptions:
    """Fabric steps as the configuration says: probe Python, step timeout, GPUs per node."""
    settings = config.probes.settings()
    return FabricOptions(
        python_for={t.name: settings.python_for(t.name) for t in targets},
        step_timeout_s=config.acceptance.step_timeout_s,
        gpus_per_node=contract_of(config).gpus_per_node,
        allow_cpu=settings.allow_cpu,
    )


async def _run_interruptible(
    campaign: Campaign, runtime: FleetRuntime, launcher: FabricLauncher, state: CampaignState
) -> int | None:
    """Run the campaign; Ctrl-C (or SIGTERM) ends it and every remote process."""
    loop = asyncio.get_running_loop()
    await runtime.start()
    task = asyncio.ensure_future(campaign.run(state))
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
        return None
    except asyncio.CancelledError:
        return EXIT_INTERRUPTED
    except (OSError, KeyError) as exc:
        print(f"gpufleet accept: {exc}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await launcher.close()  # ends every fabric process group still running
        await runtime.stop()


def write_reports(report: dict[str, Any], directory: Path) -> list[Path]:
    """report.json, report.md, report.html and report.xml (JUnit) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    forms = {
        "report.json": json.dumps(report, indent=1, allow_nan=False) + "\n",
        "report.md": report_markdown(report),
        "report.html": report_html(report),
        "report.xml": report_junit(report),
    }
    paths = []
    for name, text in forms.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
