"""Probing nodes from a running fleet: one run per node, judged against the fleet.

The runner judges a node's GPUs against their datasheet and each other; this module
adds the fleet: every new report is judged together with the latest report of every
other probed node, so a GPU 10 % below the fleet's median becomes a straggler even
when it passes on its own. Verdicts are kept per (node, GPU) and stamped onto the
snapshots the dashboard and the exporter read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from operator import is_
from pathlib import Path

from collectors.ssh import NodeTarget, SshOptions, connect_node
from fleet.model import FleetSnapshot, NodeSnapshot, ProbeVerdict, evolve
from history.probes import latest_gpu_verdicts, read_probe_history, record_probe_report
from probes.collect import ProgressCallback
from probes.report import ProbeReport, Suite
from probes.runner import ProbeRunner, ProbeTarget
from probes.settings import ProbeSettings

log = logging.getLogger(__name__)

ProbeKey = tuple[str, int]  # (node, GPU index)


class FleetProber:
    """Runs probes on the operator's request and remembers what they found."""

    def __init__(
        self,
        targets: Sequence[NodeTarget],
        ssh_options: SshOptions,
        settings: ProbeSettings,
        data_dir: Path | None,
    ) -> None:
        self._targets = {t.name: t for t in targets}
        self._data_dir = data_dir
        self._runner: ProbeRunner | None = None
        self._settings = settings
        self._ssh_options = ssh_options
        self._latest: dict[str, ProbeReport] = {}
        self.verdicts: dict[ProbeKey, ProbeVerdict] = {}
        self._decorated: dict[str, tuple[NodeSnapshot, int, NodeSnapshot]] = {}
        self._version = 0
        self._nodes: tuple[NodeSnapshot, ...] = ()  # the nodes tuple decorate last handed out
        if data_dir is not None and (data_dir / "probes").is_dir():
            self.verdicts = latest_gpu_verdicts(read_probe_history(data_dir))

    @property
    def runner(self) -> ProbeRunner:
        """The probe runner, built on first use (building the probe bundle costs I/O)."""
        if self._runner is None:
            self._runner = ProbeRunner(
                lambda t: connect_node(_node_target(t), self._ssh_options), self._settings
            )
        return self._runner

    def cancel(self, node: str) -> bool:
        """Cancel the probe running on ``node``; False when none was."""
        return self._runner is not None and self._runner.cancel(node)

    def report(self, node: str) -> ProbeReport | None:
        """The latest report of ``node`` from this run of gpufleet (fleet-judged)."""
        return self._latest.get(node)

    async def probe(
        self, node: str, suite: Suite, on_progress: ProgressCallback | None = None
    ) -> ProbeReport:
        """Run ``suite`` on ``node``, judge it against the fleet, record it, return it.

        Raises:
            KeyError: ``node`` is not part of the fleet.
        """
        target = self._targets[node]
        # Judged against the other probed nodes, so an unsure fleet straggler is measured
        # again before it is shown.
        peers = [r for name, r in self._latest.items() if name != node]
        report = await self.runner.run(target, suite, on_progress, peers)
        if report.status in ("error", "cancelled"):
            return report
        self._latest[node] = report
        for judged in self.runner.judge(list(self._latest.values())):
            self._latest[judged.node] = judged
            for verdict in judged.verdicts:
                self.verdicts[(judged.node, verdict.gpu)] = verdict.verdict
        self._version += 1
        report = self._latest[node]
        if self._data_dir is not None:
            try:
                await asyncio.to_thread(record_probe_report, self._data_dir, report)
            except OSError:
                log.exception("could not record the probe report of %s", node)
        return report

    def decorate(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """``snapshot`` with each probed GPU's latest verdict in ``probe_verdict``."""
        if not self.verdicts:
            return snapshot
        nodes = tuple(self._decorate_node(n) for n in snapshot.nodes)
        # Every node as last tick: hand out last tick's tuple too, so readers that skip an
        # unchanged tuple (the history recorder) still skip a probed fleet's quiet ticks.
        if len(nodes) == len(self._nodes) and all(map(is_, nodes, self._nodes)):
            nodes = self._nodes
        self._nodes = nodes
        return replace(snapshot, nodes=nodes)

    def _decorate_node(self, node: NodeSnapshot) -> NodeSnapshot:
        cached = self._decorated.get(node.name)
        # Same source object and no new verdicts: hand back the same decorated object, so
        # the dashboard's per-node line cache keeps working for probed nodes too.
        if cached is not None and cached[0] is node and cached[1] == self._version:
            return cached[2]
        if not any((node.name, g.index) in self.verdicts for g in node.gpu_briefs):
            return node
        gpus = tuple(
            replace(g, probe_verdict=self.verdicts.get((node.name, g.index), g.probe_verdict))
            for g in node.gpus
        )
        decorated = evolve(node, gpus=gpus)  # its ports stay unbuilt until read
        self._decorated[node.name] = (node, self._version, decorated)
        return decorated


def _node_target(target: ProbeTarget) -> NodeTarget:
    if not isinstance(target, NodeTarget):
        raise TypeError(f"expected a NodeTarget, got {type(target).__name__}")
    return target
