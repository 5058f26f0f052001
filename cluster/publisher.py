"""A shard on the bus: per-tick summaries, the JetStream event log, detail on request.

``ShardPublisher`` listens to a fleet (anything with the
:class:`fleet.facade.FleetFacade` shape, normally ``FleetRuntime``): each snapshot
becomes one summary on core NATS and, when something happened, one event batch on
JetStream. A slow or absent NATS never slows the tick: the listener only stores the
newest summary and queues batches; a pump task sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import date

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg

from cluster.auth import AuthError, NatsAuth
from cluster.bus import BusError, connect, ensure_event_stream
from cluster.chunked import CHUNK_BYTES, ChunkStore
from cluster.fleet_sla import LedgerRequest, shard_ledger
from cluster.probe_wire import ProbeCancel, ProbeReply, ProbeRequest, ProgressForwarder
from cluster.process_answers import ProcessAnswers
from cluster.remote_export import ExportAsk, ExportPart, ShardHistoryFiles, shard_export_part
from cluster.section import ClusterSection
from cluster.shards import ShardSpec
from cluster.signing import ShardSigner, SigningKeyError
from cluster.takeover import (
    HEARTBEAT_WILDCARD,
    Heartbeat,
    Takeover,
    heartbeat_subject,
    summary_with_adopted,
)
from cluster.wire import (
    GpuVerdictChange,
    ProbeOutcome,
    ShardEvents,
    encode,
    events_subject,
    request_subject,
    summarize,
    summary_subject,
)
from collectors.sanitize import clean_text
from collectors.tasks import cancel_all
from fleet.facade import FleetFacade, GpuSeries, ProcessReader
from fleet.model import FleetSnapshot, Verdict
from history.layout import day_of_ms
from history.ledger import LedgerInputs
from ledger.sla.section import SlaSection
from probes.report import ProbeReport

log = logging.getLogger(__name__)

# The shard's history as the SLA ledger reads it (``HistoryRecorder.sla_inputs``).
LedgerReader = Callable[[date, date, float], LedgerInputs]
MAX_QUEUED_BATCHES = 1000  # about a quarter hour of busy ticks while NATS is away
PROBE_TIMEOUT_S = 900.0


class SeriesRequest(msgspec.Struct, array_like=True, frozen=True):
    """``gpu_series`` asked of the owning shard."""

    node: str
    gpu: int
    points: int = 120


MAX_PROBES_AT_ONCE = 8  # per shard; each loads a node's GPUs for minutes


class ShardPublisher:
    """Publishes one shard's fleet to NATS and answers requests for its nodes.

    Args:
        fleet: the shard's fleet (``FleetRuntime``).
        spec: which shard this is.
        url: the NATS server.
        interval: the fleet's tick interval in seconds (viewers judge silence by it).
        ledger: the shard's history for ``ledger`` requests (the attached SLA header).
        contract: the fleet's [sla] contract, sent with the ledger (a shard judges none).
        files: the shard's history directory, for ``export`` requests.
        chunk_bytes: the most payload bytes in one chunk of a large reply.
        auth: credentials and trust for NATS; default: the fleet configuration's
            ``[cluster]`` table (what ``serve --shard`` was given).
        signer: signs every summary part and event batch; default: the ``[cluster]``
            table's ``signing_key_file``, if any.
        takeover: heartbeats to and from the other shards, and the silent shards' nodes
            this shard collects (published with its own); None: neither.
    """

    def __init__(
        self,
        fleet: FleetFacade,
        spec: ShardSpec,
        url: str,
        interval: float,
        *,
        ledger: LedgerReader | None = None,
        contract: SlaSection | None = None,
        files: ShardHistoryFiles | None = None,
        chunk_bytes: int = CHUNK_BYTES,
        auth: NatsAuth | None = None,
        signer: ShardSigner | None = None,
        takeover: Takeover | None = None,
    ) -> None:
        self._fleet = fleet
        self.takeover = takeover
        self._heartbeat: bytes | None = None  # the newest tick's
        self._takeover_task: asyncio.Task[None] | None = None
        self._auth = auth
        self._signer = signer
        self._ledger = ledger
        self._contract = contract
        self._files = files
        self._chunks = ChunkStore(chunk_bytes)
        self.spec = spec
        self._url = url
        self._interval = interval
        self._seq = 0
        self._summary: list[bytes] = []  # the newest tick's parts
        self._batches: deque[bytes] = deque(maxlen=MAX_QUEUED_BATCHES)
        self._wake = asyncio.Event()
        self._verdicts: dict[tuple[str, int], Verdict] = {}
        self._nc: Client | None = None
        self._pump: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self.sent_bytes = 0  # summaries and batches handed to NATS, for the bench
        self._authenticated = False  # whether NATS knows who asks (set on start)
        self._probing: set[str] = set()  # nodes with a probe running for a viewer
        self.refused_probes = 0  # probe requests answered with a refusal
        self.process_answers = ProcessAnswers(self._process_reader, str(spec))

    async def start(self) -> None:
        """Connect, make sure the event stream exists, serve requests, follow the fleet.

        Raises:
            BusError: NATS is not reachable.
        """
        self._signer = self._signer or self._configured_signer()
        auth = self._nats_auth()
        self._authenticated = auth.authenticated or "@" in self._url
        self._nc = nc = await connect(self._url, f"gpufleet-shard-{self.spec}", auth)
        await ensure_event_stream(nc.jetstream())
        k = self.spec.index
        await nc.subscribe(request_subject(k, "detail"), cb=self._on_detail)
        await nc.subscribe(request_subject(k, "series"), cb=self._on_series)
        await nc.subscribe(request_subject(k, "processes"), cb=self._on_processes)
        await nc.subscribe(request_subject(k, "probe"), cb=self._on_probe)
        await nc.subscribe(request_subject(k, "cancel"), cb=self._on_cancel)
        await nc.subscribe(request_subject(k, "ledger"), cb=self._on_ledger)
        await nc.subscribe(request_subject(k, "chunk"), cb=self._on_chunk)
        await nc.subscribe(request_subject(k, "export"), cb=self._on_export)
        self._pump = asyncio.create_task(self._send_forever(), name=f"shard-{k}-publish")
        self._unsubscribe = self._fleet.subscribe(self.on_snapshot)
        if self.takeover is not None:
            await self._follow_peers(nc, self.takeover)

    async def _follow_peers(self, nc: Client, takeover: Takeover) -> None:
        async def heard(msg: Msg) -> None:
            takeover.heard(msg.data)

        await nc.subscribe(HEARTBEAT_WILDCARD, cb=heard)
        takeover.listener = self._on_adopted_snapshot
        if takeover.peers.after_s > 0:  # 0: heartbeats only, never a takeover
            name = f"shard-{self.spec.index}-takeover"
            self._takeover_task = asyncio.create_task(takeover.run_forever(), name=name)

    def _cluster_section(self) -> ClusterSection | None:
        config = getattr(self._fleet, "config", None)
        cluster = getattr(config, "cluster", None)
        return cluster if isinstance(cluster, ClusterSection) else None

    def _configured_signer(self) -> ShardSigner | None:
        cluster = self._cluster_section()
        try:
            return None if cluster is None else cluster.signer(self.spec.index)
        except SigningKeyError as exc:
            raise BusError(str(exc)) from None

    def _seal(self, body: bytes) -> bytes:
        if self._signer is None:
            return body
        adopting = () if self.takeover is None else self.takeover.adopting
        return self._signer.seal(body, adopting)

    def _nats_auth(self) -> NatsAuth:
        """The given credentials, else those of the fleet's own ``[cluster]`` table.

        Raises:
            BusError: a secret file named there cannot be read.
        """
        if self._auth is not None:
            return self._auth
        cluster = self._cluster_section()
        if cluster is None:
            return NatsAuth()
        try:
            return cluster.nats_auth()
        except AuthError as exc:
            raise BusError(str(exc)) from None

    async def stop(self) -> None:
        """Send what is queued, then close the connection."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        # A task inside a NATS request can drop one cancellation (asyncio.wait_for on
        # Python 3.11): cancel_all sends it again until the task ends.
        tasks = [t for t in (*self._probes, self._pump, self._takeover_task) if t is not None]
        await cancel_all(tasks, 1.0)
        await self.process_answers.stop()
        if self.takeover is not None:
            await self.takeover.stop()
        if self._nc is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                await self._flush()
                await self._nc.drain()
            self._nc = None

    # -- out -------------------------------------------------------------------------------

    def on_snapshot(self, snapshot: FleetSnapshot) -> None:
        """The fleet's listener: encode now, send from the pump."""
        self._seq += 1
        k, n = self.spec.index, self.spec.count
        adopted = self.takeover.snapshots() if self.takeover is not None else []
        if adopted:
            self._summary = summary_with_adopted(
                self.spec, self._seq, self._interval, snapshot, adopted
            )
        else:
            self._summary = summarize(
                k,
                n,
                self._seq,
                self._interval,
                snapshot.nodes,
                snapshot.taken_at,
                snapshot.columns,
                snapshot.utilization,
            )
        if self.takeover is not None:
            beat = Heartbeat(
                k, n, self._seq, snapshot.taken_at, self.takeover.adopting, self.takeover.sessions
            )
            self._heartbeat = encode(beat)
        self._queue_events(snapshot)

    def _on_adopted_snapshot(self, snapshot: FleetSnapshot) -> None:
        """What happened on adopted nodes goes into this shard's event log."""
        self._queue_events(snapshot)

    def _queue_events(self, snapshot: FleetSnapshot) -> None:
        k = self.spec.index
        batch = ShardEvents(
            k,
            snapshot.taken_at,
            snapshot.transitions,
            snapshot.new_events,
            self._gpu_changes(snapshot),
        )
        if batch:
            self._batches.append(encode(batch))
        self._wake.set()

    def _gpu_changes(self, snapshot: FleetSnapshot) -> tuple[GpuVerdictChange, ...]:
        changes = []
        for node in snapshot.nodes:
            for gpu in node.gpu_briefs:  # briefs: no GPU object built each tick
                key = (node.name, gpu.index)
                before = self._verdicts.get(key)
                if before is not None and before != gpu.verdict:
                    at = gpu.since if gpu.since is not None else snapshot.taken_at
                    changes.append(
                        GpuVerdictChange(node.name, gpu.index, before, gpu.verdict, at, gpu.reasons)
                    )
                self._verdicts[key] = gpu.verdict
        return tuple(changes)

    async def _send_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._flush()
            except Exception as exc:  # NATS away: the summary is retried next tick
                log.warning("shard %s: publishing failed: %s", self.spec, exc)

    async def _flush(self) -> None:
        nc = self._nc
        if nc is None:
            return
        parts, self._summary = self._summary, []
        for part in parts:
            await nc.publish(summary_subject(self.spec.index), self._seal(part))
            self.sent_bytes += len(part)
        beat, self._heartbeat = self._heartbeat, None
        if beat is not None:  # after the summary: a peer that hears it may hand back
            await nc.publish(heartbeat_subject(self.spec.index), self._seal(beat))
        js = nc.jetstream()
        while self._batches:
            batch = self._batches[0]
            await js.publish(events_subject(self.spec.index), self._seal(batch), timeout=5.0)
            self._batches.popleft()  # only once the stream has it
            self.sent_bytes += len(batch)

    # -- requests --------------------------------------------------------------------------

    async def _on_detail(self, msg: Msg) -> None:
        name = msg.data.decode("utf-8", "replace")
        fleets = [self._fleet.latest()]
        if self.takeover is not None:  # an adopted node's detail is this shard's to give
            fleets.extend(self.takeover.snapshots())
        node = None
        for latest in fleets:
            node = latest.node(name) if latest is not None else None
            if node is not None:
                break
        await msg.respond(b"" if node is None else encode(node.detached()))

    async def _on_processes(self, msg: Msg) -> None:
        self.process_answers.ask(msg.data.decode("utf-8", "replace"), msg.respond)

    def _process_reader(self, node: str) -> ProcessReader | None:
        """The fleet that collects ``node``: this shard's own, or an adopted shard's."""
        latest = self._fleet.latest()
        if latest is not None and latest.node(node) is not None:
            fleet: object = self._fleet
        elif self.takeover is not None:
            fleet = self.takeover.fleet_of(node)
        else:
            return None
        return fleet if isinstance(fleet, ProcessReader) else None

    async def _on_series(self, msg: Msg) -> None:
        try:
            asked = msgspec.msgpack.decode(msg.data, type=SeriesRequest)
            series = self._fleet.gpu_series(asked.node, asked.gpu, max(1, min(asked.points, 3600)))
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError):
            series = GpuSeries((), (), ())
        await msg.respond(encode(series))

    async def _on_ledger(self, msg: Msg) -> None:
        try:
            asked = msgspec.msgpack.decode(msg.data, type=LedgerRequest)
        except (msgspec.DecodeError, msgspec.ValidationError):
            await msg.respond(b"")  # the asker reports a malformed reply
            return
        if self._ledger is not None:
            first, last = (
                day_of_ms(asked.start_ms),
                day_of_ms(max(asked.start_ms, asked.end_ms - 1)),
            )
            inputs = self._ledger(first, last, time.time())
        else:
            inputs = LedgerInputs([], [], live=False)
        ledger = shard_ledger(self.spec.index, inputs, self._contract, asked)
        await msg.respond(self._chunks.first(encode(ledger)))

    async def _on_export(self, msg: Msg) -> None:
        try:
            asked = msgspec.msgpack.decode(msg.data, type=ExportAsk)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            part = ExportPart(error=f"malformed export request: {exc}")
        else:
            if self._files is None:
                part = ExportPart(error="this shard records no history")
            else:  # the recorder flushes on the loop; reading parquet goes to a thread
                self._files.flush()
                part = await asyncio.to_thread(shard_export_part, self._files.data_dir, asked)
        await msg.respond(self._chunks.first(encode(part)))

    async def _on_chunk(self, msg: Msg) -> None:
        await msg.respond(self._chunks.take(msg.data))

    async def _on_probe(self, msg: Msg) -> None:
        try:
            asked = msgspec.msgpack.decode(msg.data, type=ProbeRequest)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            await msg.respond(encode(ProbeReply(error=f"malformed probe request: {exc}")))
            return
        refusal = self._probe_refusal(asked)
        if refusal is not None:
            self.refused_probes += 1
            log.warning("shard %s: probe of %s refused: %s", self.spec, asked.node, refusal)
            await msg.respond(encode(ProbeReply(error=refusal)))
            return
        log.warning(
            "shard %s: probe (%s) of %s requested by %s",
            self.spec,
            asked.suite,
            clean_text(asked.node, 200),
            asked.operator or "an unnamed operator",
        )
        # A probe takes minutes: run it beside the subscription so detail requests flow.
        self._probing.add(asked.node)
        task = asyncio.create_task(self._answer_probe(msg, asked))
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)
        task.add_done_callback(lambda _: self._probing.discard(asked.node))

    def _probe_refusal(self, asked: ProbeRequest) -> str | None:
        """Why this request runs no probe, or None. Over a NATS without credentials anyone
        who reaches the server could ask; one probe per node and a few per shard at once."""
        if not self._authenticated:
            return (
                "probes through NATS need authenticated NATS (users with permissions,"
                " docs/scale-out.md); this shard connects without credentials"
            )
        if asked.node in self._probing:
            return f"a probe of {clean_text(asked.node, 200)} is already running"
        if len(self._probing) >= MAX_PROBES_AT_ONCE:
            return f"{MAX_PROBES_AT_ONCE} probes are running on this shard; try again later"
        return None

    async def _answer_probe(self, msg: Msg, asked: ProbeRequest) -> None:
        forwarder = None
        try:
            if asked.progress is not None and self._nc is not None:
                forwarder = ProgressForwarder(self._nc.publish, asked.progress)
            report = await self._fleet.probe(asked.node, asked.suite, forwarder)
        except (PermissionError, KeyError, RuntimeError, OSError) as exc:
            reply = ProbeReply(error=str(exc))
        else:
            reply = ProbeReply(report=report)
            self._queue_probe_outcome(report)
        finally:
            if forwarder is not None:
                await forwarder.close()  # every event is sent before the report
        if forwarder is not None:
            reply = msgspec.structs.replace(reply, events=forwarder.sent)
        await msg.respond(encode(reply))

    async def _on_cancel(self, msg: Msg) -> None:
        try:
            asked = msgspec.msgpack.decode(msg.data, type=ProbeCancel)
        except (msgspec.DecodeError, msgspec.ValidationError):
            await msg.respond(b"")
            return
        await msg.respond(b"1" if self._fleet.cancel_probe(asked.node) else b"0")

    def _queue_probe_outcome(self, report: ProbeReport) -> None:
        verdicts = tuple((v.gpu, v.verdict) for v in report.verdicts)
        outcome = ProbeOutcome(report.node, report.finished, report.status, verdicts)
        batch = ShardEvents(self.spec.index, report.finished, probes=(outcome,))
        self._batches.append(encode(batch))
        self._wake.set()
