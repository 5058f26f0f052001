"""``AttachedFleet``: the whole sharded fleet as a FleetFacade, from NATS alone (no SSH).

``gpufleet watch --attach nats://...`` hands it to the same dashboard that a local
fleet drives. It follows every shard's summaries and replays the JetStream event log,
ticks at its own interval, and asks the owning shard (request/reply) for what the
summaries leave out: a node's full detail and GPU series while the node screen shows
it, and probe runs. Any number of viewers can attach; none changes what the others see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy

from cluster.auth import NatsAuth, redact
from cluster.board import ShardBoard
from cluster.bus import connect
from cluster.fleet_sla import FIRST_FIGURE_MS, FleetSla
from cluster.process_wire import decode_answer
from cluster.publisher import SeriesRequest
from cluster.remote_export import export_from_folders, export_through_shards
from cluster.remote_probes import RemoteProbes, operator_identity
from cluster.shards import STALE_INTERVALS
from cluster.signed_wire import owned_events, owned_summary, within_bounds
from cluster.signing import ShardKeys, unverified_body
from cluster.wire import (
    EVENTS_WILDCARD,
    SUMMARY_WILDCARD,
    decode_events,
    decode_node,
    decode_summary,
    encode,
    request_subject,
)
from collectors.tasks import cancel_all
from fleet.facade import (
    ExportRequest,
    FleetError,
    FleetUnreachable,
    GpuSeries,
    ProbeListener,
    ProbeReport,
    ProcessListing,
    ReadOnlyFleet,
    RequestFailed,
    SnapshotListener,
    Suite,
    UnknownNode,
    UtilizationPoint,
)
from fleet.model import FleetSnapshot

log = logging.getLogger(__name__)

FOCUS_S = 5.0  # a node the node screen asked about recently gets its detail fetched
REQUEST_TIMEOUT_S = 2.0
# A shard gives a node's agent 20 s to list its processes (collectors/ssh/processes.py).
PROCESSES_TIMEOUT_S = 25.0
EXPORT_TIMEOUT_S = 300.0  # a shard reads a month of parquet before its first chunk
SLA_REFRESH_S = 30.0  # as often as a local fleet's header (gpufleet.runtime)
_SERIES = msgspec.msgpack.Decoder(GpuSeries)


class AttachedFleet:
    """Every shard's nodes, as one fleet, for dashboards and ``--headless`` viewers.

    Args:
        url: the NATS server the shards publish to.
        read_only: refuse probes (as ``--read-only``).
        tick_s: seconds between snapshots handed to listeners.
        stale_intervals: a shard silent this many of its intervals is ``unmonitored``.
        clock: unix time.
        history_dir: the shards' history root (``DATA`` holding ``shard=K``), when this
            viewer can read it (same host or shared filesystem): the export dialog
            exports from it; without it, every shard exports its part over NATS.
        sla_refresh_s: seconds between asking the shards for their SLA ledgers.
        sla_first_figure_s: monitored time before the header's first SLA figure.
        auth: credentials and trust for NATS (``[cluster]``'s ``nats_*`` keys).
        keys: the shards' public keys (``[cluster] shard_public_keys``): only what the
            owning shard signed is shown; the rest is dropped and counted (``dropped``).
            None: unsigned summaries are taken as they come.
        hints: more lines the dashboard shows when it opens (how to attach another view:
            a line printed before the dashboard is hidden until it quits).
    """

    def __init__(
        self,
        url: str,
        *,
        read_only: bool = False,
        tick_s: float = 1.0,
        stale_intervals: float = STALE_INTERVALS,
        clock: Callable[[], float] = time.time,
        history_dir: Path | None = None,
        sla_refresh_s: float = SLA_REFRESH_S,
        sla_first_figure_s: float = FIRST_FIGURE_MS / 1000,
        auth: NatsAuth | None = None,
        keys: ShardKeys | None = None,
        hints: Sequence[str] = (),
    ) -> None:
        self.url = url
        self._hints = tuple(hints)
        self._auth = auth
        self.keys = keys
        self.history_dir = history_dir
        self.read_only = read_only
        self.board = ShardBoard(stale_intervals)
        self.sla = FleetSla(round(sla_first_figure_s * 1000))
        self._sla_refresh_s = sla_refresh_s
        self._sla_due = float("-inf")
        self._sla_task: asyncio.Task[object] | None = None
        self._tick_s = tick_s
        self._clock = clock
        self._nc: Client | None = None
        self._subs: list[Subscription] = []
        self._listeners: list[SnapshotListener] = []
        self._latest: FleetSnapshot | None = None
        self._focus: dict[str, float] = {}
        self._series: dict[tuple[str, int], GpuSeries] = {}
        self.probes = RemoteProbes(lambda: self._nc, self.board.owner_of, read_only)
        self.probes.operator = operator_identity(None if auth is None else auth.user)
        self._util: list[UtilizationPoint] = []
        self._ticker: asyncio.Task[None] | None = None
        self._replayed = False
        self.malformed = 0  # messages dropped because they did not decode
        self.out_of_bounds = 0  # summaries beyond the shard, part or node limits
        self.received_bytes = 0  # summary bytes taken from NATS (the fan-in's load)

    @property
    def notices(self) -> Sequence[str]:
        attached = f"attached to {redact(self.url)}: nodes come from the shards, no SSH from here"
        return (attached, *self._hints)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, follow summaries and the event log, start ticking.

        Raises:
            BusError: NATS is not reachable.
        """
        self._nc = nc = await connect(self.url, "gpufleet-viewer", self._auth)
        self._subs.append(await nc.subscribe(SUMMARY_WILDCARD, cb=self._on_summary))
        await self._follow_events()
        self._ticker = asyncio.create_task(self._tick_forever(), name="attach-tick")

    async def stop(self) -> None:
        """Stop ticking and close the connection."""
        # A tick inside a NATS request can drop one cancellation (asyncio.wait_for on
        # Python 3.11): the ticker went on and stop() waited for ever. cancel_all sends
        # it again until the task ends.
        await cancel_all([t for t in (self._ticker, self._sla_task) if t is not None], 1.0)
        self._ticker = self._sla_task = None
        if self._nc is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                await self._nc.close()
            self._nc = None

    async def _follow_events(self) -> bool:
        """Replay the event log, then follow it; False while no shard created it yet."""
        if self._replayed or self._nc is None:
            return self._replayed
        try:
            sub = await self._nc.jetstream().subscribe(
                EVENTS_WILDCARD,
                cb=self._on_events,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.ALL,
            )
        except Exception as exc:  # nats-py: NotFoundError until a shard made the stream
            log.debug("event log not available yet: %s", exc)
            return False
        self._subs.append(sub)
        self._replayed = True
        return True

    @property
    def dropped(self) -> Counter[str]:
        """Messages and nodes not shown, by reason (malformed, unsigned, ...)."""
        counts: Counter[str] = Counter()
        if self.malformed:
            counts["malformed"] = self.malformed
        if self.out_of_bounds:
            counts["out of bounds"] = self.out_of_bounds
        if self.keys is not None:
            counts.update(self.keys.dropped)
        return counts

    def _opened(self, data: bytes) -> tuple[int | None, bytes] | None:
        """The signing shard (None when not checking) and the body; None when dropped."""
        if self.keys is None:
            return None, unverified_body(data)
        return self.keys.open(data)

    async def _on_summary(self, msg: Msg) -> None:
        self.received_bytes += len(msg.data)
        opened = self._opened(msg.data)
        if opened is None:
            return
        signer, body = opened
        try:
            summary = decode_summary(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.malformed += 1
            return
        if not within_bounds(summary, self.board.nodes_held(summary.shard, summary.part)):
            self.out_of_bounds += 1
            return
        if signer is not None and self.keys is not None:
            # An adopter's node of a shard this viewer also hears nothing from is taken.
            silent = self.board.silent_shards(self._clock())
            checked = owned_summary(self.keys, signer, summary, silent)
            if checked is None:
                return
            summary = checked
        self.board.apply_summary(summary, self._clock())

    async def _on_events(self, msg: Msg) -> None:
        opened = self._opened(msg.data)
        if opened is None:
            return
        signer, body = opened
        try:
            batch = decode_events(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.malformed += 1
            return
        if signer is not None and self.keys is not None:
            owned = owned_events(self.keys, signer, batch, self.board.silent_shards(self._clock()))
            if owned is None:
                return
            batch = owned
        # Replayed history fills the node screens; only what happens now is "new".
        live = batch.taken_at >= self._clock() - 2 * self._tick_s
        self.board.apply_events(batch, live=live)

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self._tick_s)
            try:
                await self._follow_events()
                await self._fetch_focused()
                self._refresh_sla()
                self.tick()
            except Exception:  # one failed tick must not freeze every viewer
                log.exception("attached tick failed")

    def tick(self, now: float | None = None) -> FleetSnapshot:
        """Assemble the fleet from what the shards said and hand it to every listener."""
        now = self._clock() if now is None else now
        snapshot = replace(self.board.snapshot(now), sla=self.sla.latest)
        self._record_utilization(snapshot)
        self._latest = snapshot
        for listener in tuple(self._listeners):
            try:
                listener(snapshot)
            except Exception:
                log.exception("snapshot listener %r failed", listener)
        return snapshot

    def _refresh_sla(self) -> None:
        """Ask the shards for their ledgers now and then, beside the ticks."""
        now = self._clock()
        busy = self._sla_task is not None and not self._sla_task.done()
        if busy or now < self._sla_due or not self.board.shards:
            return
        self._sla_due = now + self._sla_refresh_s
        self.sla.count = self.board.shard_count()
        shards = {k for k, _ in self.board.shards}
        self._sla_task = asyncio.create_task(self.sla.refresh(self._ask, shards, now))

    def _record_utilization(self, snapshot: FleetSnapshot) -> None:
        util = snapshot.utilization.now
        if util is None:
            return
        minute = snapshot.taken_at // 60 * 60
        if self._util and self._util[-1].ts == minute:
            self._util[-1] = UtilizationPoint(minute, util, util)
        else:
            self._util.append(UtilizationPoint(minute, util, util))
            del self._util[:-1440]  # a day of minutes since attaching

    # -- requests to the owning shard ------------------------------------------------------

    async def _request(self, node: str, what: str, payload: bytes, wait_s: float) -> bytes:
        shard = self.board.owner_of(node)
        if shard is None or self._nc is None:
            raise UnknownNode(f"{node} is not part of the fleet")
        reply = await self._nc.request(request_subject(shard, what), payload, timeout=wait_s)
        return bytes(reply.data)

    async def _ask(self, subject: str, payload: bytes) -> bytes:
        if self._nc is None:
            raise FleetUnreachable("not attached")
        reply = await self._nc.request(subject, payload, timeout=REQUEST_TIMEOUT_S)
        return bytes(reply.data)

    async def node_detail(self, node: str) -> None:
        """Fetch ``node``'s full snapshot and GPU series from its shard."""
        data = await self._request(node, "detail", node.encode(), REQUEST_TIMEOUT_S)
        if not data:
            return
        detail = decode_node(data)
        self.board.apply_detail(detail, self._clock())
        for gpu in detail.gpus:
            asked = encode(SeriesRequest(node, gpu.index))
            raw = await self._request(node, "series", asked, REQUEST_TIMEOUT_S)
            self._series[(node, gpu.index)] = _SERIES.decode(raw)

    async def _fetch_focused(self) -> None:
        now = self._clock()
        for node, until in tuple(self._focus.items()):
            if until < now:
                del self._focus[node]
                continue
            try:
                await self.node_detail(node)
            except (TimeoutError, KeyError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                log.info("detail of %s unavailable: %s", node, exc)
            except Exception as exc:  # nats-py NoRespondersError when the shard is gone
                log.info("detail of %s unavailable: %s", node, exc)

    # -- FleetFacade ---------------------------------------------------------------------

    def latest(self) -> FleetSnapshot | None:
        return self._latest

    def subscribe(self, listener: SnapshotListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def utilization_series(self, window_s: float) -> Sequence[UtilizationPoint]:
        since = self._clock() - window_s
        return [p for p in self._util if p.ts >= since]

    def gpu_series(self, node: str, gpu: int, points: int = 120) -> GpuSeries:
        # The node screen asks this for the node it shows: fetch that node's detail.
        self._focus[node] = self._clock() + FOCUS_S
        series = self._series.get((node, gpu), GpuSeries((), (), ()))
        return GpuSeries(series.util[-points:], series.power_w[-points:], series.temp_c[-points:])

    async def processes(self, node: str) -> ProcessListing:
        """``node``'s GPU processes, read by the shard that collects it (the node screen).

        Raises:
            UnknownNode: no shard has the node, or its shard does not collect it.
            RequestFailed: the shard did not answer, or answered out of bounds.
        """
        try:
            data = await self._request(node, "processes", node.encode(), PROCESSES_TIMEOUT_S)
            return decode_answer(node, data)
        except Exception as exc:
            raise as_fleet_error(exc) from exc

    async def export(self, request: ExportRequest) -> Path:
        """From the shards' data directory when this viewer can read it, else over NATS."""
        try:
            if self.history_dir is not None:
                return await asyncio.to_thread(export_from_folders, self.history_dir, request)
            return await export_through_shards(
                self._ask_slowly, {k for k, _ in self.board.shards}, request, self._clock()
            )
        except Exception as exc:
            raise as_fleet_error(exc) from exc

    async def _ask_slowly(self, subject: str, payload: bytes) -> bytes:
        if self._nc is None:
            raise FleetUnreachable("not attached")
        reply = await self._nc.request(subject, payload, timeout=EXPORT_TIMEOUT_S)
        return bytes(reply.data)

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        try:
            return await self.probes.run(node, suite, on_progress)
        except Exception as exc:
            raise as_fleet_error(exc) from exc

    def cancel_probe(self, node: str) -> bool:
        return self.probes.cancel(node)

    def probe_report(self, node: str) -> ProbeReport | None:
        return self.probes.report(node)


def as_fleet_error(exc: Exception) -> FleetError:
    """What crosses the facade for a failure of the shards' helpers (which raise builtins).

    Each class kept also derives from the builtin it replaces, so callers that caught
    ``KeyError`` or ``PermissionError`` still do.
    """
    if isinstance(exc, FleetError):
        return exc
    if isinstance(exc, KeyError):
        return UnknownNode(str(exc.args[0]) if exc.args else "unknown node")
    if isinstance(exc, PermissionError):
        return ReadOnlyFleet(str(exc))
    if isinstance(exc, ConnectionError):
        return FleetUnreachable(str(exc))
    return RequestFailed(str(exc) or type(exc).__name__)
