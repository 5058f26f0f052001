"""``gpufleet probe NODE``: run a probe suite on one node from the shell.

Progress goes to stderr (a bar on a terminal), the result to stdout (a table, or
``--json``), and the run is recorded in the history's ``probes`` table. Ctrl-C
cancels the run and ends the probe on the node. Exit status: 0 every GPU passed,
1 some GPU did not (or the run was incomplete), 2 the probe could not run,
130 cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
import sys
from typing import Any, TextIO

from collectors.ssh import NodeTarget, SshOptions, connect_node
from gpufleet.config import ConfigError
from gpufleet.session import add_fleet_arguments, default_data_dir, fail, load_fleet
from history.probes import record_probe_report
from probes.command import validate_gpu_selection
from probes.render import progress_line, report_dict, report_text
from probes.report import ProbeEvent, ProbeFailure, ProbeProgress, ProbeReport, Suite
from probes.runner import ProbeRunner, ProbeTarget
from probes.settings import ProbeSettings


def register(sub: Any) -> None:
    parser = sub.add_parser("probe", help="run GEMM / HBM / SDC / PCIe / NCCL probes on a node")
    parser.add_argument("node", metavar="NODE", help="a node name from the configured fleet")
    parser.add_argument(
        "--suite",
        choices=("quick", "full"),
        default=None,
        help="quick: gemm, hbm, sdc; full: adds pcie and nccl (default: [probes] suite)",
    )
    parser.add_argument("--gpus", default=None, help="'all' or indices such as 0,3")
    parser.add_argument("--timeout", type=float, default=None, help="seconds for the suite")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-record", action="store_true", help="do not add it to history")
    add_fleet_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config, targets, options = load_fleet(args)
    except ConfigError as exc:
        return fail(str(exc))
    target = next((t for t in targets if t.name == args.node), None)
    if target is None:
        return fail(f"node {args.node!r} is not in the configured fleet ({len(targets)} hosts)")
    settings = config.probes.settings()
    if args.timeout is not None:
        if args.timeout <= 0:
            return fail("--timeout must be positive")
        settings = dataclasses.replace(settings, timeout_s=args.timeout)
    if args.gpus is not None:
        try:
            settings = dataclasses.replace(settings, gpus=validate_gpu_selection(args.gpus))
        except ValueError as exc:
            return fail(str(exc))
    suite: Suite = args.suite or config.probes.suite
    report = asyncio.run(probe_node(target, options, settings, suite))
    if not args.no_record and report.status != "error":
        record_probe_report(args.data_dir or default_data_dir(), report)
    print(json.dumps(report_dict(report), indent=2) if args.json else report_text(report))
    return exit_status(report)


async def probe_node(
    target: NodeTarget, options: SshOptions, settings: ProbeSettings, suite: Suite
) -> ProbeReport:
    """Run ``suite`` on ``target`` with a progress bar on stderr; Ctrl-C cancels it."""

    async def connect(node: ProbeTarget) -> Any:
        assert isinstance(node, NodeTarget)
        return await connect_node(node, options)

    runner = ProbeRunner(connect, settings)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, runner.cancel, target.name)
    try:
        return await runner.run(target, suite, ProgressBar(sys.stderr))
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def exit_status(report: ProbeReport) -> int:
    """0 all passed, 1 not all passed or incomplete, 2 nothing ran, 130 cancelled."""
    if report.status == "cancelled":
        return 130
    if report.status == "error":
        return 2
    passed = report.status == "ok" and all(v.verdict == "pass" for v in report.verdicts)
    return 0 if passed else 1


class ProgressBar:
    """Redraws one status line on a terminal; otherwise says which probe started."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._probe: str | None = None

    def __call__(self, event: ProbeEvent) -> None:
        if isinstance(event, ProbeProgress):
            self._progress(event)
        elif isinstance(event, ProbeFailure):
            self._stream.write(("\n" if self._tty else "") + f"{event.node}: {event.message}\n")
        self._stream.flush()

    def _progress(self, event: ProbeProgress) -> None:
        if self._tty:
            self._stream.write("\r\x1b[2K" + progress_line(event))
            if event.fraction >= 1.0:
                self._stream.write("\n")
        elif event.probe != self._probe:
            self._stream.write(f"{event.node}: {event.probe} ...\n")
        self._probe = event.probe
