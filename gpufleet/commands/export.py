"""``gpufleet export``: utilization history to parquet, CSV or JSON lines."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import platformdirs

from gpufleet.invocation import command_line

FORMATS = ("parquet", "csv", "json")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "export",
        help="utilization history to parquet / csv / json",
        description="Aggregate recorded per-GPU minute rollups to a level and resolution "
        f"(columns: `{command_line('help', 'history')}`). Safe while a recorder is running.",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="history directory")
    parser.add_argument("-c", "--config", type=Path, default=None, help="configuration (TOML)")
    parser.add_argument("--since", required=True, help="7d, 24h or a date (UTC), e.g. 2026-09-01")
    parser.add_argument("--until", default=None, help="a date or time (UTC); default: now")
    parser.add_argument("--resolution", choices=("1m", "1h", "1d"), default="1h")
    parser.add_argument("--level", choices=("gpu", "node", "fleet"), default="node")
    parser.add_argument("--format", choices=FORMATS, default=None, help="default: from -o suffix")
    parser.add_argument(
        "--window", default=None, help="rolling-average window at fleet level (default 7d)"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cluster.history import history_root
    from fleet.facade import ExportRequest
    from gpufleet.config import ConfigError
    from gpufleet.config_file import read_config
    from history.section import HistorySection, parse_duration
    from ledger.export import export_history

    logging.basicConfig(level=logging.WARNING, format="gpufleet export: %(message)s")
    try:
        history = read_config(args.config).history if args.config else HistorySection()
        window_s = parse_duration(args.window) if args.window else history.export_rolling_window_s
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    fmt = args.format or _format_of(args.output)
    request = ExportRequest(
        path=args.output, since=args.since, until=args.until, level=args.level,
        resolution=args.resolution, format=fmt,
    )  # fmt: skip
    data_dir = args.data_dir or Path(platformdirs.user_data_dir("gpufleet"))
    with history_root(data_dir) as root:  # shards' DATA/shard=K read as one fleet
        if not (root / "gpu_minutes").is_dir():
            return _fail(f"no recorded history in {data_dir} (record with watch or serve first)")
        try:
            path = export_history(root, request, progress=_progress, rolling_window_s=window_s)
        except ValueError as exc:
            return _fail(str(exc))
    print(f"\ngpufleet export: wrote {path}", file=sys.stderr)
    return 0


def _format_of(path: Path) -> Any:
    suffix = path.suffix.lstrip(".").lower()
    return {"jsonl": "json", "ndjson": "json"}.get(
        suffix, suffix if suffix in FORMATS else "parquet"
    )


def _progress(done: int, total: int) -> None:
    # One line rewritten in place: days read so far, then done.
    step = "done" if done >= total else f"day {done}/{total - 1}"
    print(f"\rgpufleet export: {step} ", end="", file=sys.stderr, flush=True)


def _fail(message: str) -> int:
    print(f"gpufleet export: {message}", file=sys.stderr)
    return 2
