"""``gpufleet demo``: a simulated fleet over real SSH on loopback, then the dashboard."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from collectors.demo import DemoFleet, start_demo_fleet
from collectors.sim.jobs import SimulatedLoginNode
from collectors.sim.scenario import ScenarioError, load_scenario
from fleet.health.node import starting_up
from fleet.model import FleetSnapshot
from gpufleet.config import Config, parse_config
from gpufleet.demo_load import load_warning
from gpufleet.invocation import command_line
from gpufleet.runtime import FleetRuntime
from gpufleet.session import fail, run_dashboard, running, wait_for_signal


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo", help="simulated fleet over real SSH on loopback, then the dashboard"
    )
    parser.add_argument("--nodes", type=_positive_int, default=16, help="simulated nodes")
    parser.add_argument("--gpus-per-node", type=_positive_int, default=8, help="GPUs per node")
    parser.add_argument(
        "--scenario", type=Path, default=None, help="fault scenario TOML (default: demo)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated workloads")
    parser.add_argument(
        "--headless", action="store_true", help="no dashboard: print a summary per second"
    )
    parser.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    parser.add_argument(
        "--json-out", type=Path, default=None, help="write the final per-node state as JSON"
    )
    parser.add_argument("--theme", default=None, help="dashboard theme")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="record history here (default: a fresh temporary directory)",
    )
    parser.add_argument(
        "--metrics-addr", default=None, help="also serve Prometheus /metrics at HOST:PORT"
    )
    parser.add_argument(
        "--read-only", action="store_true", help="hide actions that change anything on nodes"
    )
    parser.add_argument(
        "--shards",
        type=_positive_int,
        default=None,
        help="run N shard collectors as processes on a local nats-server and attach to them",
    )
    parser.add_argument(
        "--accept",
        action="store_true",
        help="run a short acceptance campaign on 8 simulated nodes and exit with its status",
    )
    parser.add_argument("--soak", default=None, help="with --accept: soak duration (default 20s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.accept:  # the campaign starts its own 8-node fleet: no load warning for --nodes
        return _run_accept(args)
    if args.soak is not None:
        return fail("--soak needs --accept")
    # Said first, before any other check or start-up work: the operator sees it at once.
    overload = load_warning(args.nodes, args.gpus_per_node)
    if overload is not None:
        print(f"gpufleet demo: warning: {overload}", file=sys.stderr)
    # Checked before anything is created: a bad scenario leaves no directory behind.
    try:
        load_scenario(args.scenario)
    except ScenarioError as exc:
        return fail(str(exc))
    return asyncio.run(_demo(args))


# The simulated nodes answer the agent's command only; an ssh session into one would hang.
NO_SHELL = "Simulated nodes have no shell: nothing to ssh into (the fleet keeps running)"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


DEMO_CONTRACT = """\
# The gpufleet demo's example contract (docs/sla.md).
[sla]
committed_nodes = {nodes}
gpus_per_node = {gpus}
gpu_hour_price = 2.50
currency = "USD"
slo_percent = 99.5
grace_minutes = 1
tiers = [
  {{ below = 99.5, credit_percent = 10 }},
  {{ below = 99, credit_percent = 25 }},
  {{ below = 95, credit_percent = 50 }},
]

[probes]
probe_python = {python}
"""


def demo_contract(nodes: int, gpus: int) -> str:
    """The demo's configuration as TOML: every node committed, tiered credits, 1-minute grace.

    Probes run with this very Python, which has torch when gpufleet was installed with
    the ``probes`` extra.
    """
    return DEMO_CONTRACT.format(nodes=nodes, gpus=gpus, python=json.dumps(sys.executable))


def demo_config(text: str) -> Config:
    """The parsed demo configuration."""
    return parse_config(tomllib.loads(text), source="<demo>")


async def _demo(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="gpufleet-demo-"))
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fail(f"cannot use --data-dir {data_dir}: {exc.strerror}")
    overload = load_warning(args.nodes, args.gpus_per_node)  # also shown on the dashboard
    demo = await start_demo_fleet(args.nodes, args.gpus_per_node, args.scenario, args.seed)
    try:
        contract = demo_contract(args.nodes, args.gpus_per_node)
        config = demo_config(contract)
        contract_path = data_dir / "demo-config.toml"
        if args.shards is not None:
            from gpufleet.demo_shards import run_sharded_demo

            status = await run_sharded_demo(args, demo, contract, data_dir)
            print(
                f"gpufleet demo: history of every shard in {data_dir}/shard=K; the SLA claim:\n"
                f"  {command_line('sla', '-c', contract_path, '--data-dir', data_dir)}",
                file=sys.stderr,
            )
            return status
        contract_path.write_text(contract, encoding="utf-8")
        runtime = demo_runtime(config, demo, data_dir, read_only=args.read_only)
        if overload is not None:
            runtime.notices = (*runtime.notices, overload)
        if args.headless:
            status = await _headless(runtime, args.duration, args.metrics_addr)
        else:
            status = await run_dashboard(runtime, theme=args.theme, metrics_addr=args.metrics_addr)
        print(
            f"gpufleet demo: history recorded in {data_dir}; the month's SLA claim:\n"
            f"  {command_line('sla', '-c', contract_path, '--data-dir', data_dir)}",
            file=sys.stderr,
        )
        if args.json_out is not None:
            snapshot = runtime.latest()
            if snapshot is not None:
                _write_json(args.json_out, snapshot)
        return status
    finally:
        await demo.stop()


def demo_runtime(
    config: Config, demo: DemoFleet, data_dir: Path, *, read_only: bool = False
) -> FleetRuntime:
    """The runtime watching the demo's simulated nodes (which have no shell for `S`),
    asking their simulated Slurm login node for job names and accounts."""
    sim = demo.loopback.simulation
    login = (
        None
        if sim is None
        else SimulatedLoginNode(sim.scenario, sim.epoch, sim.gpus, list(demo.loopback.nodes))
    )
    runtime = FleetRuntime(
        config,
        demo.targets,
        data_dir=data_dir,
        read_only=read_only,
        ssh_options=demo.options,
        job_metadata=login,
    )
    runtime.login_refusal = NO_SHELL
    return runtime


async def _headless(runtime: FleetRuntime, duration: float | None, metrics_addr: str | None) -> int:
    def show(snapshot: FleetSnapshot) -> None:
        print(summary_line(snapshot), flush=True)

    runtime.subscribe(show)
    async with running(runtime, metrics_addr=metrics_addr):
        await wait_for_signal(duration_s=duration)
    return 0


def summary_line(snapshot: FleetSnapshot) -> str:
    """One line per tick: streaming, connecting and broken nodes, healthy GPUs, the broken
    node names. A node not heard from since start-up is connecting, not broken."""
    connecting = sum(1 for n in snapshot.nodes if starting_up(n.state, n.broken_reasons))
    broken = [
        n.name for n in snapshot.nodes if n.broken and not starting_up(n.state, n.broken_reasons)
    ]
    shown = ", ".join(broken[:6]) + (" ..." if len(broken) > 6 else "")
    return (
        f"nodes {snapshot.nodes_streaming}/{len(snapshot.nodes)} streaming, "
        + (f"{connecting} connecting, " if connecting else "")
        + f"{len(broken)} broken; GPUs {snapshot.gpus_healthy}/{snapshot.gpus_total} healthy"
        + (f"; broken: {shown}" if broken else "")
    )


def _write_json(path: Path, snapshot: FleetSnapshot) -> None:
    # One shape for one collector and for an attached view of shards, so the two
    # compare node by node.
    from gpufleet.attach import write_json

    write_json(path, snapshot)


def _run_accept(args: argparse.Namespace) -> int:
    """``demo --accept``: the campaign's report in the data directory, its exit status."""
    from gpufleet.commands.accept import parse_duration
    from gpufleet.demo_accept import run_demo_accept

    try:
        soak = parse_duration(args.soak) if args.soak else None
    except ValueError as exc:
        return fail(str(exc))
    return asyncio.run(run_demo_accept(args.data_dir, soak))
