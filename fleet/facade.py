"""The one door from the terminal UI into the domain.

``tui/`` imports this module (and ``fleet.model``) and nothing else of the fleet.
``gpufleet.runtime.FleetRuntime`` implements :class:`FleetFacade` for a real or
simulated fleet; tests may pass any object with the same shape.

Three capabilities are optional, each a Protocol of its own (the dashboard asks with
``isinstance``, so a facade that lacks one, e.g. a remote one, still works):

- :class:`HasDesk` (``desk: OperatorDesk | None``): the event log, acknowledgements and
  alerts of the process that records history (without one, or with ``None``, the
  dashboard keeps a desk of its own, fed from the snapshots it receives);
- :class:`SshLogin` (``ssh_argv(node) -> list[str] | None``): the ``ssh`` argument list
  that logs into ``node`` with the options gpufleet uses for it (``None``: no target;
  without the capability, ``S`` says so);
- :class:`ProcessReader` (``async processes(node) -> ProcessListing``): the GPU compute
  processes on ``node``, read on request over its connection (the node screen asks
  while it is open; without it, the screen says the listing is not available);
- :class:`StateHistory` (``broken_intervals(node) -> Sequence[BrokenInterval]``): the
  intervals ``node`` was not up, as the fleet's history records them (without it, the
  node screen shows the node's current interval only: :func:`current_interval`);
- :class:`HasRepairHistory` (``repair_history(node) -> (rows, serials)``): the node's
  repairs this month from the repairs ledger, each a :class:`RepairLine`, and the GPU
  serials it has had (without it, the node screen shows no repair history);
- :class:`HasCampaign` (``campaign_report() -> Mapping | None``): the acceptance
  campaign's report document (``campaign.report.report_dict``) while one is on record
  in the data directory (None: no campaign, and the panel hides).

The desk's ``acknowledge(node, gpu, note, ticket=None)`` takes the provider's ticket id,
which the repairs ledger reports beside the acknowledgement.

Failures cross this door as :class:`FleetError` subclasses whose message is one line
for the operator: :class:`UnknownNode`, :class:`ReadOnlyFleet`, :class:`NotAvailable`,
:class:`FleetUnreachable`, :class:`RequestFailed`. Any other exception out of a facade
is a bug in it.

Hostlist expressions (``node-[001-004]``) are expanded by the domain's own expander,
:func:`expand_hosts` (ClusterShell, bounded and validated), re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from collectors.agent.fields import GPU_FIELDS
from collectors.errors import (
    FleetError,
    FleetUnreachable,
    NotAvailable,
    ReadOnlyFleet,
    RequestFailed,
    UnknownNode,
)
from collectors.inventory import InventoryError, expand_hosts
from collectors.process_list import GpuProcess, ProcessListing
from collectors.updates import CONNECTED_STATUSES
from fleet.alerts import Acknowledgement, Alert
from fleet.desk import OperatorDesk
from fleet.event_log import LogEntry, collapse_flaps, event_entry, merge_log
from fleet.jobs import JobInterval, gpu_job_text, matches_job, matches_user
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
    "BrokenInterval",
    "EventRecord",
    "ExportRequest",
    "FleetError",
    "FleetFacade",
    "FleetSnapshot",
    "FleetUnreachable",
    "GpuColumns",
    "GpuProbeVerdict",
    "GpuProcess",
    "GpuSeries",
    "GpuSnapshot",
    "HasDataDir",
    "HasDesk",
    "InventoryError",
    "JobInterval",
    "LogEntry",
    "NodeSnapshot",
    "NotAvailable",
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
    "ProcessReader",
    "ReadOnlyFleet",
    "RequestFailed",
    "SlaSummary",
    "SshLogin",
    "StateHistory",
    "Suite",
    "UnknownNode",
    "UtilizationPoint",
    "UtilizationSummary",
    "Verdict",
    "collapse_flaps",
    "current_interval",
    "event_entry",
    "expand_hosts",
    "gpu_job_text",
    "matches_job",
    "matches_user",
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
        """Write utilization history as asked and return the path written.

        Raises:
            NotAvailable: this fleet records no history.
            FleetUnreachable: a remote fleet is not connected.
        """
        ...

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        """Run a probe suite on ``node`` (only on the operator's request) and judge it
        against the fleet.

        Raises:
            ReadOnlyFleet: the fleet is read-only.
            UnknownNode: ``node`` is not part of the fleet.
            NotAvailable: this fleet cannot probe (a preview).
        """
        ...

    def cancel_probe(self, node: str) -> bool:
        """Cancel the probe running on ``node``; False when none was running."""
        ...

    def probe_report(self, node: str) -> ProbeReport | None:
        """The latest probe report of ``node`` in this session, judged against the fleet."""
        ...


@runtime_checkable
class HasDataDir(Protocol):
    """A facade that records history in a data directory (exports default beside it)."""

    @property
    def data_dir(self) -> Path | None:
        """The data directory, or None when nothing is recorded."""
        ...


@runtime_checkable
class HasDesk(Protocol):
    """A facade whose process keeps the event log, acknowledgements and alerts."""

    @property
    def desk(self) -> OperatorDesk | None:
        """The desk, or None where this facade has none after all (the dashboard then
        keeps its own)."""
        ...


@runtime_checkable
class SshLogin(Protocol):
    """A facade that knows how gpufleet reaches each node over SSH."""

    def ssh_argv(self, node: str) -> list[str] | None:
        """The ``ssh`` argument list that logs into ``node``; None when it has no target."""
        ...


@runtime_checkable
class ProcessReader(Protocol):
    """A facade that can list the GPU compute processes of a node on request."""

    async def processes(self, node: str) -> ProcessListing:
        """The compute processes on ``node``'s GPUs, read now.

        Raises:
            UnknownNode: ``node`` is not part of the fleet.
        """
        ...


@dataclass(frozen=True, slots=True)
class BrokenInterval:
    """``node`` was ``state`` (broken, unreachable, unmonitored) from ``start`` until
    ``end`` (unix seconds; ``end`` None: still going on; ``start`` None: not known)."""

    state: str
    start: float | None
    end: float | None
    reasons: tuple[str, ...] = ()


@runtime_checkable
class StateHistory(Protocol):
    """A facade that keeps each node's state intervals (the ones history records)."""

    def broken_intervals(self, node: str) -> Sequence[BrokenInterval]:
        """The intervals ``node`` was not up, newest first (an open one first of all)."""
        ...


def current_interval(node: NodeSnapshot) -> BrokenInterval | None:
    """The interval ``node`` is in now when it is not up, from its snapshot alone: what a
    fleet without :class:`StateHistory` can tell."""
    if node.state == "up":
        return None
    return BrokenInterval(node.state, node.state_since, None, node.broken_reasons)


class RepairLine(Protocol):
    """One repair of a node as the node screen lists it (times already formatted)."""

    @property
    def detected(self) -> str: ...

    @property
    def line(self) -> str:
        """The event log's one-line story of the repair."""
        ...

    @property
    def kind(self) -> str: ...

    @property
    def breached(self) -> bool:
        """True when the repair missed the contract's repair term."""
        ...


@runtime_checkable
class HasRepairHistory(Protocol):
    """A facade that keeps the repairs ledger of its fleet's history."""

    def repair_history(self, node: str) -> tuple[tuple[RepairLine, ...], tuple[str, ...]]:
        """``node``'s repairs this month (as last computed, never read here) and the
        serials its GPUs have had."""
        ...


@runtime_checkable
class HasCampaign(Protocol):
    """A facade whose data directory may hold an acceptance campaign."""

    def campaign_report(self) -> Mapping[str, Any] | None:
        """The campaign's report document as last read (at most once a second, off the
        event loop); None when there is no campaign."""
        ...
