"""``gpufleet report``: what the money bought, delivered against contracted."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

import platformdirs

from gpufleet.invocation import command_line
from gpufleet.output import emit, fail


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "report",
        help="what the money bought: delivered against contracted, GPU-hours by class, energy",
        description="Where every paid GPU-hour went (working, idle, provider, broken, "
        "unmonitored), deviations from the [contract], energy and CO2, and the cost of "
        "delivered TF32 compute, from recorded history. Periods are UTC; the default is "
        "this month to date.",
    )
    parser.add_argument("-c", "--config", type=Path, default=None, help="configuration (TOML)")
    parser.add_argument("--data-dir", type=Path, default=None, help="history directory")
    when = parser.add_argument_group("period (one of)")
    when.add_argument("--month", default=None, help="YYYY-MM")
    when.add_argument("--week", default=None, help="ISO week, YYYY-Www (e.g. 2026-W06)")
    when.add_argument("--since", default=None, help="ISO date or time (UTC unless given)")
    when.add_argument("--until", default=None, help="ISO date or time (default: now)")
    parser.add_argument(
        "--jobs",
        action="store_true",
        help="the jobs section alone: incidents with the jobs they hit, idle GPU time by job",
    )
    parser.add_argument("--format", choices=("md", "json", "html"), default="md")
    parser.add_argument("-o", "--output", type=Path, default=None, help="file (default: stdout)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cluster.history import history_root
    from gpufleet.config import ConfigError, default_config_path
    from gpufleet.config_file import read_config
    from ledger.delivery.grid import GridIntensityError
    from ledger.delivery.period import report_bounds
    from ledger.delivery.report import (
        build_jobs_report,
        build_report,
        render_html,
        render_json,
        render_markdown,
    )

    logging.basicConfig(level=logging.WARNING, format="gpufleet report: %(message)s")
    config_path = args.config or default_config_path()
    try:
        config = read_config(config_path, given=args.config is not None)
    except ConfigError as exc:
        return fail("report", str(exc))
    now_ms = round(time.time() * 1000)
    try:
        start_ms, end_ms = report_bounds(now_ms, args.month, args.week, args.since, args.until)
    except ValueError as exc:
        return fail("report", str(exc))
    if config.contract is None:
        print(
            f"gpufleet report: no [contract] table: nothing is judged against a contract and "
            f"money is not shown (its keys: `{command_line('help', 'config')}`)",
            file=sys.stderr,
        )
    data_dir = args.data_dir or Path(platformdirs.user_data_dir("gpufleet"))
    with history_root(data_dir) as root:  # shards' DATA/shard=K read as one fleet
        if not (root / "coverage").is_dir():
            return fail(
                "report", f"no recorded history in {data_dir} (record with watch or serve first)"
            )
        try:
            if args.jobs:
                report = build_jobs_report(root, start_ms, end_ms, config.contract, config.jobs)
            else:
                report = build_report(
                    root, start_ms, end_ms, config.contract, config.energy, now_ms, config.jobs
                )
        except (ValueError, GridIntensityError) as exc:
            return fail("report", str(exc))
    render = {"json": render_json, "html": render_html, "md": render_markdown}[args.format]
    emit("report", render(report), args.output)
    return 0
