"""The naive controller of bench/bench_fleet.py, in its own process.

What a first version of a fleet monitor does with the same nodes: asyncssh with its
default cipher preference (chacha20-poly1305 first), ``json.loads`` per line, one
``pl.concat`` of an 8-row frame per message onto the minute's history, labelled
``prometheus_client`` Gauges set per GPU field and port counter on every message, and
``generate_latest`` every 15 s as a scrape would (gzipped with ``--gzip``, as
prometheus_client's handler does when the scraper accepts gzip).

    python bench/lib/fleet_naive.py --port P --key KEY --nodes N --progress FILE

Rows are read by the field order the node declared in its ``hello`` (zip: a row
shorter than the declaration fills what it has), as any consumer of protocol v1 must.
A line that fails is counted and the node's stream goes on: an earlier version indexed
rows by the full port field list, raised on every node's first sample and silently
ended every stream, so it measured an idle process.

With ``--ui`` it is the naive dashboard too: a Textual ``DataTable`` (one row per
node, one column per GPU's utilization) whose cells are updated on every message, run
on the terminal it was given (bench_fleet gives it a 200x50 pty); SIGTERM ends it.

Rewrites FILE with ``{"seen": n, "ingested": n, "failed": n}`` (nodes that sent a
sample, samples ingested, lines that raised) every half second from a thread, so a
saturated event loop still reports; runs until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import resource
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import asyncssh
import polars as pl
from prometheus_client import CollectorRegistry, Gauge, generate_latest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from collectors.agent.fields import GPU_FIELDS, PORT_FIELDS

SCRAPE_S = 15.0
HISTORY_S = 10.0  # the in-memory frame is dropped (as if rolled up) this often


class NaiveController:
    """Per-message work, as the naive stack does it."""

    def __init__(self) -> None:
        registry = CollectorRegistry()
        self.registry = registry
        self.gpu = {
            f: Gauge(f"naive_gpu_{f}", f, ["node", "gpu"], registry=registry) for f in GPU_FIELDS
        }
        self.port = {
            f: Gauge(f"naive_port_{f}", f, ["node", "port"], registry=registry) for f in PORT_FIELDS
        }
        self.history: pl.DataFrame | None = None
        self.history_from = 0.0
        self.nodes_seen: set[str] = set()
        self.ingested = 0
        self.failed = 0
        self.fields: dict[str, tuple[list[str], list[str]]] = {}  # node: gpu, port fields

    def on_line(self, node: str, line: bytes) -> None:
        try:
            self._on_message(node, json.loads(line))
        except Exception:  # one bad line must not end the node's stream unseen
            self.failed += 1

    def _on_message(self, node: str, message: dict[str, Any]) -> None:
        if message.get("type") == "hello":
            self.fields[node] = (message["gpu_fields"], message["port_fields"])
            return
        if message.get("type") != "sample":
            return
        gpu_fields, port_fields = self.fields.get(node, (list(GPU_FIELDS), list(PORT_FIELDS)))
        self.nodes_seen.add(node)
        t = message["t"]
        if t - self.history_from >= HISTORY_S:
            self.history, self.history_from = None, t
        rows = message["gpus"]
        frame = pl.DataFrame(
            {
                "t": [t] * len(rows),
                "node": [node] * len(rows),
                "gpu": list(range(len(rows))),
                **{f: [r[i] for r in rows] for i, f in enumerate(gpu_fields)},
            }
        )
        self.history = frame if self.history is None else pl.concat([self.history, frame])
        for g, row in enumerate(rows):
            for f, value in zip(gpu_fields, row, strict=False):
                if value is not None:
                    self.gpu[f].labels(node, str(g)).set(value)
        for p, row in enumerate(message["ports"]):
            for f, value in zip(port_fields, row, strict=False):
                if value is not None and f in self.port:
                    self.port[f].labels(node, str(p)).set(value)
        self.ingested += 1

    async def scrapes(self, gzipped: bool) -> None:
        while True:
            await asyncio.sleep(SCRAPE_S)
            body = generate_latest(self.registry)
            if gzipped:  # what prometheus_client's handler does for Accept-Encoding: gzip
                gzip.compress(body)


async def follow(
    controller: NaiveController, name: str, port: int, key: str, gate: asyncio.Semaphore
) -> None:
    async with gate:
        conn = await asyncssh.connect(
            "127.0.0.1", port, username="bench", client_keys=[key], known_hosts=None,
            encoding=None,
        )  # fmt: skip
    async with conn:
        process = await conn.create_process("python3 agent.pyz --interval 1.0", encoding=None)
        async for line in process.stdout:
            controller.on_line(name, line)


def report(controller: NaiveController, progress: Path, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        seen = len(controller.nodes_seen)
        counts = {"seen": seen, "ingested": controller.ingested, "failed": controller.failed}
        # Whole or not at all: the bench reads this file while it is rewritten.
        scratch = progress.with_suffix(".tmp")
        scratch.write_text(json.dumps(counts))
        os.replace(scratch, progress)


def start_streams(
    controller: NaiveController, port: int, key: str, nodes: int, progress: Path, gzipped: bool
) -> list[asyncio.Task[None]]:
    """Every node's follower, the scrape loop and the progress thread."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    gate = asyncio.Semaphore(64)
    tasks = [
        asyncio.create_task(follow(controller, f"node-{i:05d}", port, key, gate))
        for i in range(1, nodes + 1)
    ]
    tasks.append(asyncio.create_task(controller.scrapes(gzipped)))
    stop = threading.Event()
    reporter = threading.Thread(target=report, args=(controller, progress, stop), daemon=True)
    reporter.start()
    return tasks


async def run(port: int, key: str, nodes: int, progress: Path, gzipped: bool) -> None:
    controller = NaiveController()
    tasks = start_streams(controller, port, key, nodes, progress, gzipped)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def run_dashboard(port: int, key: str, nodes: int, progress: Path, gzipped: bool) -> None:
    """The naive dashboard: a DataTable with a cell update per GPU per message."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    class NaiveDashboard(App[None]):
        def compose(self) -> ComposeResult:
            yield DataTable()

        def on_mount(self) -> None:
            table = self.query_one(DataTable)
            self.columns = [table.add_column(f"gpu{g}", key=f"gpu{g}") for g in range(8)]
            for i in range(1, nodes + 1):
                table.add_row(*["-"] * 8, key=f"node-{i:05d}")
            self.controller = TableController(table)
            self.tasks = start_streams(self.controller, port, key, nodes, progress, gzipped)

    class TableController(NaiveController):
        def __init__(self, table: DataTable[str]) -> None:
            super().__init__()
            self.table = table

        def _on_message(self, node: str, message: dict[str, Any]) -> None:
            super()._on_message(node, message)
            if message.get("type") == "sample":
                for g, row in enumerate(message["gpus"][:8]):
                    self.table.update_cell(node, f"gpu{g}", str(row[0]))

    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    NaiveDashboard().run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--progress", type=Path, required=True)
    parser.add_argument("--ui", action="store_true", help="the naive DataTable dashboard")
    parser.add_argument("--gzip", action="store_true", help="gzip each scrape's body")
    args = parser.parse_args()
    if args.ui:
        run_dashboard(args.port, args.key, args.nodes, args.progress, args.gzip)
    else:
        asyncio.run(run(args.port, args.key, args.nodes, args.progress, args.gzip))


if __name__ == "__main__":
    main()
