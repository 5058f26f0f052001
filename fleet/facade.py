"""The one door from the terminal UI into the domain.

``tui/`` imports this module (and ``fleet.model``) and nothing else of the fleet.
``gpufleet.runtime.FleetRuntime`` implements :class:`FleetFacade` for a real or
simulated fleet; tests may pass any object with the same shape.

Two capabilities are optional (the dashboard asks with ``getattr``, so a facade that
lacks them, e.g. a remote one, still works):

- ``desk: OperatorDesk``: the event log, acknowledgements and alerts of the process that
  records history (without one the dashboard keeps a desk of its own, fed from the
  snapshots it receives);
- ``ssh_argv(node) -> list[str] | None``: the ``ssh`` argument list that logs into
  ``node`` with the options gpufleet uses for it (without it, ``S`` says so);
- ``async processes(node) -> ProcessListing``: the GPU compute processes on ``node``,
  read on request over its connection (the node screen asks while it is open; without
  it, the screen says the listing is not available).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from collectors.agent.fields import GPU_FIELDS
from collectors.process_list import GpuProcess, ProcessListing
from collectors.updates import CONNECTED_STATUSES
from fleet.alerts import Acknowledgement, Alert
from fleet.desk import OperatorDesk
from fleet.event_log import LogEntry, event_entry, merge_log
from fleet.model import (
    VERDICT_RANK,
    VERDICTS,
    EventRecord,
    FleetSnapshot,
    GpuColumns,
    GpuSnapshot,
    NodeSnapshot,
    PortSnapshot,
    ProbeVerdict,
    SlaSummary,
    UtilizationSummary,
    Verdict,
)
from fleet.records import ExportRequest, GpuSeries, UtilizationPoint
from probes.report import (
    GpuProbeVerdict,
    ProbeEvent,
    ProbeFailure,
    ProbeMeasurement,
    ProbeProgress,
    ProbeReport,
    Suite,
)

__all__ = [
    "CONNECTED_STATUSES",
    "GPU_FIELDS",
    "VERDICTS",
    "VERDICT_RANK",
    "Acknowledgement",
    "Alert",
    "EventRecord",
    "ExportRequest",
    "FleetFacade",
    "FleetSnapshot",
    "GpuColumns",
    "GpuProbeVerdict",
    "GpuProcess",
    "GpuSeries",
    "GpuSnapshot",
    "LogEntry",
    "NodeSnapshot",
    "OperatorDesk",
    "PortSnapshot",
    "ProbeEvent",
    "ProbeFailure",
    "ProbeListener",
    "ProbeMeasurement",
    "ProbeProgress",
    "ProbeReport",
    "ProbeVerdict",
    "ProcessListing",
    "SlaSummary",
    "Suite",
    "UtilizationPoint",
    "UtilizationSummary",
    "Verdict",
    "event_entry",
    "merge_log",
]


SnapshotListener = Callable[[FleetSnapshot], None]
ProbeListener = Callable[[ProbeEvent], None]


class FleetFacade(Protocol):
    """What the dashboard may ask of the fleet."""

    read_only: bool

    @property
    def notices(self) -> Sequence[str]:
        """What the operator should know from the start, e.g. that history is not
        recorded because another gpufleet holds the data directory."""
        ...

    def latest(self) -> FleetSnapshot | None:
        """The newest snapshot, or None before the first tick."""
        ...

    def subscribe(self, listener: SnapshotListener) -> Callable[[], None]:
        """Call ``listener`` with every new snapshot (on the event loop); returns unsubscribe."""
        ...

    def utilization_series(self, window_s: float) -> Sequence[UtilizationPoint]:
        """Per-minute fleet utilization covering ``window_s`` with its rolling average."""
        ...

    def gpu_series(self, node: str, gpu: int, points: int = 120) -> GpuSeries:
        """Recent values of one GPU for the node screen's sparklines."""
        ...

    async def export(self, request: ExportRequest) -> Path:
        """Write utilization history as asked and return the path written."""
        ...

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        """Run a probe suite on ``node`` (only on the operator's request) and judge it
        against the fleet; raises PermissionError when the fleet is read-only."""
        ...

    def cancel_probe(self, node: str) -> bool:
        """Cancel the probe running on ``node``; False when none was running."""
        ...

    def probe_report(self, node: str) -> ProbeReport | None:
        """The latest probe report of ``node`` in this session, judged against the fleet."""
        ...
