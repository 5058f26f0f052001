"""``gpufleet serve``: headless collection, history recording and Prometheus /metrics.

Runs until SIGTERM or SIGINT, then closes the endpoint and every SSH connection and
flushes history before exiting 0 (docs/gpufleet.service runs it under systemd).
Log lines go to stderr as ``key=value`` pairs (``--log-format json`` for JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.shards import ShardSpec, parse_shard
from exporter.addr import parse_addr
from exporter.web_config import WebConfig, WebConfigError, load_web_config
from fleet.model import FleetSnapshot
from gpufleet.config import ConfigError, default_config_path
from gpufleet.runtime import FleetRuntime
from gpufleet.session import (
    add_fleet_arguments,
    default_data_dir,
    fail,
    load_fleet,
    wait_for_signal,
)
from gpufleet.shard import (
    read_targets_file,
    shard_config,
    shard_data_dir,
    shard_takeover,
    shard_targets,
)

if TYPE_CHECKING:
    from cluster.publisher import ShardPublisher

log = logging.getLogger("gpufleet.serve")

# LogRecord's own attributes; anything else on a record came in through ``extra=``.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}


def register(sub: Any) -> None:
    parser = sub.add_parser("serve", help="headless: collect, record history, serve /metrics")
    add_fleet_arguments(parser)
    parser.add_argument(
        "--metrics-addr",
        default=None,
        metavar="HOST:PORT",
        help="where to serve /metrics (default: [metrics] addr, 127.0.0.1:9400)",
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="collect only shard K of N of the hosts (default: [cluster] shard, else all)",
    )
    parser.add_argument(
        "--nats-url",
        default=None,
        metavar="URL",
        help="publish summaries and events to NATS (default: [cluster] nats_url)",
    )
    # The demo's loopback nodes differ only by port: it hands shards their targets.
    parser.add_argument("--targets-file", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--log-format", choices=("kv", "json"), default="kv")
    parser.add_argument("--log-level", choices=("debug", "info", "warning"), default="info")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    try:
        config, targets, options = load_fleet(args)
        spec = parse_shard(args.shard) if args.shard else config.cluster.shard_spec
        if args.targets_file is not None:
            targets = read_targets_file(args.targets_file)
            options = replace(options, ssh_config=None, backoff_cap=4.0)
    except ConfigError as exc:
        return fail(str(exc))
    except ValueError as exc:
        return fail(f"--shard/--targets-file: {exc}")
    addr = args.metrics_addr or config.metrics.addr
    try:
        parse_addr(addr)
    except ValueError as exc:
        return fail(f"--metrics-addr {exc}")
    try:
        web = load_web_config_for(config.metrics.web_config_file, args.config)
    except WebConfigError as exc:
        return fail(str(exc))
    nats_url = args.nats_url or config.cluster.nats_url
    auth = None
    if nats_url:
        from cluster.auth import AuthError

        try:  # a missing password file fails here, before the fleet starts
            auth = config.cluster.nats_auth()
        except AuthError as exc:
            return fail(str(exc))
    mine = shard_targets(targets, spec)
    contract = config.sla  # viewers judge the whole fleet's SLA from every shard's ledger
    config = shard_config(config, spec)
    data_dir = shard_data_dir(args.data_dir or default_data_dir(), spec)
    runtime = FleetRuntime(config, mine, data_dir=data_dir, ssh_options=options)
    publisher = None
    if nats_url:
        from cluster.publisher import ShardPublisher
        from cluster.remote_export import ShardHistoryFiles

        # Every shard holds every target: it may have to collect a silent shard's nodes.
        takeover = None
        if spec is not None and spec.count > 1:
            takeover = shard_takeover(config, spec, targets, options)
        publisher = ShardPublisher(
            runtime,
            spec or ShardSpec(1, 1),
            nats_url,
            config.fleet.interval,
            ledger=runtime.history.sla_inputs,
            contract=contract,
            files=ShardHistoryFiles(data_dir, runtime.history.flush),
            auth=auth,
            takeover=takeover,
        )
    return asyncio.run(serve(runtime, addr, gzip=config.metrics.gzip, publisher=publisher, web=web))


def load_web_config_for(name: str | None, config_path: Path | None) -> WebConfig | None:
    """``[metrics] web_config_file``, read relative to the config file's directory."""
    if name is None:
        return None
    base = (config_path or default_config_path()).parent
    return load_web_config(base / name)


async def serve(
    runtime: FleetRuntime,
    addr: str,
    *,
    gzip: bool = True,
    publisher: ShardPublisher | None = None,
    web: WebConfig | None = None,
) -> int:
    """Serve ``runtime`` on ``addr`` until a signal; 0 after a clean stop, 1 if ``addr`` or
    NATS fails. ``publisher`` puts the fleet on NATS (a shard of a larger fleet)."""
    from cluster.bus import BusError
    from exporter.endpoint import start_metrics_endpoint

    started = time.monotonic()
    try:
        # Bound before connecting: a taken port fails in a second, not after a fleet start.
        server = await start_metrics_endpoint(
            addr,
            runtime,
            gzip=gzip,
            web=web,
            raw_port_counters=runtime.config.metrics.raw_port_counters,
        )
    except OSError as exc:
        log.error("cannot serve metrics", extra={"addr": addr, "error": str(exc)})
        return 1
    if publisher is not None:
        try:
            await publisher.start()
        except BusError as exc:
            await server.stop()
            log.error("cannot publish", extra={"error": str(exc)})
            return 1
    reporter = FleetLogger(runtime)
    unsubscribe = runtime.subscribe(reporter)
    log.info(
        "serving",
        extra={
            "nodes": len(runtime.targets),
            "url": f"{server.url}/metrics",
            "data_dir": str(runtime.data_dir),
            "shard": str(publisher.spec) if publisher is not None else "",
        },
    )
    try:
        await runtime.start()
        await wait_for_signal()
        log.info("stopping", extra={"uptime_s": round(time.monotonic() - started, 1)})
    finally:
        await server.stop()
        unsubscribe()
        await runtime.stop()  # closes every connection, flushes and closes history
        if publisher is not None:
            await publisher.stop()  # after the runtime: its last tick is published too
    log.info("stopped")
    return 0


class FleetLogger:
    """Turns snapshots into log lines: node transitions, XIDs, and readiness once."""

    def __init__(self, runtime: FleetRuntime) -> None:
        self._runtime = runtime
        self._ready = False

    def __call__(self, snapshot: FleetSnapshot) -> None:
        for change in snapshot.transitions:
            level = logging.INFO if change.state == "up" else logging.WARNING
            reasons = "; ".join(change.reasons)
            log.log(
                level,
                "node state",
                extra={"node": change.node, "state": change.state, "reasons": reasons},
            )
        for event in snapshot.new_events:
            if event.kind == "xid":
                log.warning(
                    "xid",
                    extra={
                        "node": event.node,
                        "gpu": event.gpu,
                        "code": event.code,
                        "detail": event.detail,
                    },
                )
        if not self._ready and self._runtime.ready:
            self._ready = True
            log.info(
                "every node tried",
                extra={"streaming": snapshot.nodes_streaming, "broken": snapshot.nodes_broken},
            )


class StructuredFormatter(logging.Formatter):
    """One line per record: ``ts level logger msg`` and every ``extra=`` field."""

    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self._json = as_json

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields |= {k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS}
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        if self._json:
            return json.dumps(fields, default=str)
        return " ".join(f"{k}={_quote(v)}" for k, v in fields.items())


def _quote(value: object) -> str:
    text = "" if value is None else str(value)
    if text and not any(c in text for c in ' "=\n\\'):
        return text
    return json.dumps(text)  # quoted, with backslash escapes: still one line


def configure_logging(log_format: str, level: str) -> None:
    """Structured lines on stderr for the root logger (replacing earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter(as_json=log_format == "json"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("asyncssh").setLevel(logging.WARNING)  # one line per packet at info
