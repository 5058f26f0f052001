"""Watching a sharded fleet through NATS: the dashboard or a headless summary per tick.

Shared by ``gpufleet watch --attach`` and ``gpufleet demo --shards``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from cluster.attach import AttachedFleet
from cluster.bus import BusError
from cluster.section import ClusterSection
from fleet.model import FleetSnapshot, NodeSnapshot
from gpufleet.session import fail, wait_for_signal


@contextlib.asynccontextmanager
async def attached(viewer: AttachedFleet) -> AsyncIterator[AttachedFleet]:
    """Start following the shards and stop on exit."""
    await viewer.start()
    try:
        yield viewer
    finally:
        await viewer.stop()


async def watch_attached(
    viewer: AttachedFleet,
    *,
    headless: bool,
    theme: str | None = None,
    duration_s: float | None = None,
    json_out: Path | None = None,
) -> int:
    """Run the dashboard (or print a line per tick) over ``viewer`` until quit or signal."""
    try:
        async with attached(viewer):
            if headless:
                viewer.subscribe(lambda snap: print(summary_line(snap), flush=True))
                await wait_for_signal(duration_s=duration_s)
                status = 0
            else:
                from tui.app import build_app  # textual loads only when drawing

                app = build_app(viewer, theme=theme, read_only=viewer.read_only)
                await app.run_async()
                status = app.return_code or 0
    except BusError as exc:
        return fail(str(exc))
    snapshot = viewer.latest()
    if json_out is not None and snapshot is not None:
        write_json(json_out, snapshot)
    return status


def summary_line(snapshot: FleetSnapshot) -> str:
    """One line per tick: streaming, broken and unmonitored nodes, healthy GPUs."""
    unmonitored = sum(1 for n in snapshot.nodes if n.status == "unmonitored")
    broken = [n.name for n in snapshot.nodes if n.broken and n.status != "unmonitored"]
    shown = ", ".join(broken[:6]) + (" ..." if len(broken) > 6 else "")
    lost = sum(1 for n in snapshot.nodes for g in n.gpus if g.verdict == "lost")
    # A silent shard's GPUs are the monitor's gap: neither healthy nor unhealthy.
    healthy = sum(n.healthy_gpus for n in snapshot.nodes if n.status != "unmonitored")
    total, unseen = snapshot.gpus_total, snapshot.gpus_unmonitored
    return (
        f"nodes {snapshot.nodes_streaming}/{len(snapshot.nodes)} streaming, "
        f"{len(broken)} broken, {unmonitored} unmonitored; "
        f"GPUs {healthy}/{total} healthy"
        + (f" ({lost} lost)" if lost else "")
        + (f", {unseen} unmonitored" if unseen else "")
        + (f"; broken: {shown}" if broken else "")
    )


def node_verdict(status: str, state: str) -> str:
    """A node's verdict in one word: unmonitored, unreachable, broken or up."""
    return "unmonitored" if status == "unmonitored" else state


def snapshot_json(snapshot: FleetSnapshot) -> list[dict[str, Any]]:
    """Per node what the dashboard shows of it: verdict, status, state and reasons, each
    GPU's identity, verdict since when and readings, each port's link, and its events.

    One shape for a single collector and for the shards' attached view, so the two can
    be compared node by node.
    """
    return [node_json(node) for node in snapshot.nodes]


def node_json(node: NodeSnapshot) -> dict[str, Any]:
    """One node of :func:`snapshot_json`."""
    return {
        "name": node.name,
        "verdict": node_verdict(node.status, node.state),
        "status": node.status,
        "status_reason": node.status_reason,
        "state": node.state,
        "broken": node.broken,
        "broken_reasons": list(node.broken_reasons),
        "state_since": node.state_since,
        "last_seen": node.last_seen,
        "expected_gpus": node.expected_gpus,
        "model": node.model,
        "driver": node.driver,
        "cuda": node.cuda,
        "gpus": [_fields(g, GPU_JSON) for g in node.gpus],
        "ports": [_fields(p, PORT_JSON) for p in node.ports],
        "nics": [_fields(p, PORT_JSON) for p in node.nics],
        "events": [
            {"t": e.t, "kind": e.kind, "gpu": e.gpu, "code": e.code, "detail": e.detail}
            for e in node.events
        ],
    }


GPU_JSON = (
    "index", "uuid", "serial", "verdict", "reasons", "since", "lost", "util_gpu",
    "mem_used_bytes", "memory_total_bytes", "power_w", "power_limit_w", "temp_c",
    "nvlink_active", "nvlink_total", "probe_verdict",
)  # fmt: skip
PORT_JSON = (
    "name", "kind", "verdict", "reasons", "since", "state", "phys_state", "rate_gbps",
    "expected_rate_gbps", "link_downed_delta",
)  # fmt: skip


def _fields(item: object, names: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for name in names:
        value = getattr(item, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def fleet_json(snapshot: FleetSnapshot) -> dict[str, Any]:
    """The whole ``--json-out`` document: the time, the header's figures and the nodes."""
    util, sla = snapshot.utilization, snapshot.sla
    return {
        "taken_at": snapshot.taken_at,
        "utilization": {"now": util.now, "avg_1h": util.avg_1h, "avg_24h": util.avg_24h},
        "sla": None
        if sla is None
        else {
            "month": sla.month,
            "availability_pct": sla.availability_pct,
            "coverage_pct": sla.coverage_pct,
            "reading": sla.reading,
        },
        "nodes": snapshot_json(snapshot),
    }


def write_json(path: Path, snapshot: FleetSnapshot) -> None:
    """The final state as JSON (what ``--json-out`` asks for)."""
    text = json.dumps(fleet_json(snapshot), indent=2)
    try:
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"gpufleet: cannot write {path}: {exc.strerror}", file=sys.stderr)


def viewer_security(cluster: ClusterSection) -> dict[str, Any]:
    """``AttachedFleet`` keyword arguments from a config's ``[cluster]`` table: the NATS
    credentials and trust, and the shards' public keys.

    Raises:
        AuthError: a secret file named there cannot be read.
    """
    return {"auth": cluster.nats_auth(), "keys": cluster.shard_keys()}
