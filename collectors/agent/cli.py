"""Command line of the node agent (``python3 -m collectors.agent`` and the zipapp)."""

from __future__ import annotations

import argparse
import socket
from typing import List, Optional

from collectors.agent import AGENT_VERSION


def positive(text: str) -> float:
    """An argparse type: a number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected seconds, got %r" % text) from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError("expected a positive number of seconds, got %r" % text)
    return value


def count(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number, got %r" % text) from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected at least 1, got %r" % text)
    return value


def build_parser() -> argparse.ArgumentParser:
    """The agent's options; ``--help`` needs nothing but the standard library."""
    parser = argparse.ArgumentParser(
        prog="gpufleet-agent",
        description=(
            "gpufleet node agent %s: streams NVML and InfiniBand/Ethernet telemetry as "
            "protocol v1 JSON lines on stdout until SIGTERM, SIGINT or stdout closes."
            % AGENT_VERSION
        ),
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=("stream", "processes"),
        default="stream",
        help="stream telemetry (default), or print the GPU compute processes once and exit",
    )
    parser.add_argument("--interval", type=positive, default=1.0, help="seconds between samples")
    parser.add_argument(
        "--slow-interval",
        type=positive,
        default=10.0,
        help="seconds between reads of ECC, retired pages, row remap, NVLink and hw_counters",
    )
    parser.add_argument("--sysfs-root", default=None, help="sysfs mount point (default /sys)")
    parser.add_argument(
        "--proc-root", default=None, help="procfs mount point for 'processes' (default /proc)"
    )
    parser.add_argument("--etc-root", default=None, help="where machine-id is read (default /etc)")
    parser.add_argument(
        "--renter-user",
        action="append",
        default=[],
        metavar="USER",
        help="a user whose GPU processes are the renter's (repeat); with --renter-process, "
        "any other process is the provider's and is reported as foreign",
    )
    parser.add_argument(
        "--renter-process",
        action="append",
        default=[],
        metavar="NAME",
        help="a process name (/proc/PID/comm) that is the renter's whoever runs it (repeat)",
    )
    parser.add_argument(
        "--no-jobs", action="store_true", help="do not attribute GPUs to scheduler jobs"
    )
    parser.add_argument(
        "--jobs-refresh",
        type=positive,
        default=300.0,
        metavar="SECONDS",
        help="re-send an unchanged job list this often",
    )
    parser.add_argument(
        "--jobs-scan",
        type=positive,
        default=60.0,
        metavar="SECONDS",
        help="walk every process for idle job allocations this often",
    )
    parser.add_argument("--host", default=None, help="node name in hello (default: hostname)")
    _add_sim_arguments(parser)
    parser.add_argument(
        "--max-samples", type=count, default=None, help=argparse.SUPPRESS
    )  # tests and benchmarks: stop after N samples
    return parser


def _add_sim_arguments(parser: argparse.ArgumentParser) -> None:
    sim = parser.add_argument_group("simulated node (no GPU needed)")
    sim.add_argument(
        "--sim",
        default=None,
        metavar="SCENARIO",
        help="run on the simulated NVML node: a scenario TOML path, 'default' or 'none'",
    )
    sim.add_argument("--sim-node", default="node-001", help="node name in the scenario")
    sim.add_argument("--sim-seed", type=int, default=0, help="seed of the simulated workload")
    sim.add_argument("--sim-gpus", type=count, default=8, help="GPUs on the simulated node")
    sim.add_argument(
        "--sim-epoch",
        type=float,
        default=None,
        help="Unix time the simulated fleet started (shared by every agent of the fleet)",
    )


class Options:
    """Parsed agent options, with the defaults resolved."""

    def __init__(self, namespace: argparse.Namespace) -> None:
        self.command: str = namespace.command
        self.interval: float = namespace.interval
        self.slow_interval: float = max(namespace.slow_interval, namespace.interval)
        self.sysfs_root: Optional[str] = namespace.sysfs_root
        self.proc_root: Optional[str] = namespace.proc_root
        self.etc_root: Optional[str] = namespace.etc_root
        self.host: str = namespace.host or socket.gethostname()
        self.renter_users: List[str] = list(namespace.renter_user)
        self.renter_processes: List[str] = list(namespace.renter_process)
        self.jobs: bool = not namespace.no_jobs
        self.jobs_refresh: float = namespace.jobs_refresh
        self.jobs_scan: float = namespace.jobs_scan
        self.sim: Optional[str] = namespace.sim
        self.sim_node: str = namespace.sim_node
        self.sim_seed: int = namespace.sim_seed
        self.sim_gpus: int = namespace.sim_gpus
        self.sim_epoch: Optional[float] = namespace.sim_epoch
        self.max_samples: Optional[int] = namespace.max_samples


def parse_args(argv: Optional[List[str]] = None) -> Options:
    """Parse the command line; exits with a usage message on bad input."""
    return Options(build_parser().parse_args(argv))
