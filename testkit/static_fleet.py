"""``StaticFleet``: a small deterministic FleetFacade over snapshots you hand it.

It is what previews, SVG snapshots, Pilot tests and the benchmark use; the real
fleet is ``gpufleet.runtime.FleetRuntime``. ``push`` delivers a new snapshot to the
subscribers the way the runtime does (on the event loop). ``export`` really writes
a CSV of the per-node utilization it holds; the broken intervals come from the same
book the history recorder keeps (``history.states.NodeStateBook``), fed every snapshot.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from fleet.facade import (
    BrokenInterval,
    ExportRequest,
    FleetSnapshot,
    GpuProcess,
    GpuSeries,
    NotAvailable,
    OperatorDesk,
    ProbeListener,
    ProbeReport,
    ProcessListing,
    Suite,
    UnknownNode,
    UtilizationPoint,
)
from history.desk_log import DeskHistory
from history.states import NodeStateBook

Listener = Callable[[FleetSnapshot], None]


class StaticFleet:
    """A FleetFacade serving a fixed list of snapshots (the last one is the latest)."""

    def __init__(
        self,
        snapshots: Sequence[FleetSnapshot] = (),
        *,
        read_only: bool = False,
        export_error: Exception | None = None,
        series_error: Exception | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.read_only = read_only
        self.notices: tuple[str, ...] = ()
        self.snapshots: list[FleetSnapshot] = list(snapshots)
        self.exports: list[ExportRequest] = []
        self.process_requests: list[str] = []
        self._listeners: list[Listener] = []
        self._export_error = export_error
        self._series_error = series_error
        # The desk's clock is the fleet's: the latest snapshot's time (deterministic tests).
        self.desk: OperatorDesk | None = OperatorDesk(
            data_dir=data_dir,
            clock=self._now,
            history=DeskHistory(data_dir) if data_dir is not None else None,
        )
        self.states = NodeStateBook(session_file="static.parquet")  # never written
        for snapshot in self.snapshots:
            self.desk.observe(snapshot)  # the desk was just made
            self.states.apply(snapshot)

    def _now(self) -> float:
        latest = self.latest()
        return latest.taken_at if latest is not None else 0.0

    # -- FleetFacade ------------------------------------------------------------------
    def latest(self) -> FleetSnapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def utilization_series(self, window_s: float) -> Sequence[UtilizationPoint]:
        """A smooth diurnal curve ending at the latest snapshot, one point per minute."""
        if self._series_error is not None:
            raise self._series_error
        latest = self.latest()
        if latest is None:
            return []
        end = latest.taken_at - latest.taken_at % 60
        minutes = max(1, int(window_s // 60))
        step = max(1, minutes // 1440)  # never more than 1,440 points
        points: list[UtilizationPoint] = []
        acc: list[float] = []
        for k in range(minutes - 1, -1, -step):
            ts = end - k * 60
            util = _diurnal(ts)
            acc.append(util)
            points.append(UtilizationPoint(ts=ts, util=util, rolling=sum(acc) / len(acc)))
        return points

    def gpu_series(self, node: str, gpu: int, points: int = 120) -> GpuSeries:
        if self._series_error is not None:
            raise self._series_error
        base = (sum(map(ord, node)) + gpu * 7) % 40
        util = tuple(round(50 + 45 * math.sin((k + base) / 6.0), 1) for k in range(points))
        return GpuSeries(
            util=util,
            power_w=tuple(90 + u * 5.6 for u in util),
            temp_c=tuple(round(32 + u * 0.45) for u in util),
        )

    async def export(self, request: ExportRequest) -> Path:
        self.exports.append(request)
        if self._export_error is not None:
            raise self._export_error
        request.path.parent.mkdir(parents=True, exist_ok=True)
        with request.path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["ts", "node", "util_pct"])
            for snap in self.snapshots:
                for n in snap.nodes:
                    utils = [g.util_gpu for g in n.gpus if g.util_gpu is not None]
                    mean = sum(utils) / len(utils) if utils else ""
                    writer.writerow([snap.taken_at, n.name, mean])
        return request.path

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        # A preview has snapshots but no nodes behind them: there is nothing to probe.
        raise NotAvailable(f"the preview fleet has no real {node} to probe")

    def cancel_probe(self, node: str) -> bool:
        return False

    def probe_report(self, node: str) -> ProbeReport | None:
        return None

    def broken_intervals(self, node: str) -> Sequence[BrokenInterval]:
        """The node's intervals other than up, as history would record them, newest first."""
        rows = [i for i in self.states.intervals() if i.node == node and i.state != "up"]
        return [
            BrokenInterval(
                i.state, i.start_ms / 1000, None if i.end_ms is None else i.end_ms / 1000, i.reasons
            )
            for i in reversed(rows)
        ]

    def ssh_argv(self, node: str) -> list[str] | None:
        return None  # a preview's nodes have no SSH target

    async def processes(self, node: str) -> ProcessListing:
        """One made-up training job on the node's busy GPUs (deterministic by name)."""
        self.process_requests.append(node)
        latest = self.latest()
        snap = latest.node(node) if latest is not None else None
        if snap is None:
            raise UnknownNode(f"{node} is not part of the fleet")
        pid = 10_000 + sum(map(ord, node)) * 37
        busy = [g for g in snap.gpus if (g.util_gpu or 0) > 5]
        command = f"python3 -m torch.distributed.run --nproc-per-node {len(busy)} train.py"
        return ProcessListing(
            node,
            latest.taken_at if latest is not None else 0.0,
            tuple(GpuProcess(g.index, pid, "alice", g.mem_used_bytes, command) for g in busy),
        )

    # -- driving it -------------------------------------------------------------------
    @property
    def subscribers(self) -> int:
        """How many listeners are subscribed now."""
        return len(self._listeners)

    def push(self, snapshot: FleetSnapshot) -> None:
        """A new tick: becomes the latest and goes to every subscriber."""
        self.snapshots.append(snapshot)
        self.states.apply(snapshot)
        if self.desk is not None:  # None: a facade without a desk (the app keeps its own)
            self.desk.observe(snapshot)
        for listener in list(self._listeners):
            listener(snapshot)


def _diurnal(ts: float) -> float:
    day = 2 * math.pi * (ts % 86_400) / 86_400
    return round(62 + 22 * math.sin(day - 1.2) + 6 * math.sin(ts / 1_700), 2)
