"""``gpufleet accept``: an acceptance campaign on the fleet, with a report.

Stages (docs/acceptance.md): inventory against ``[contract]``, health gate, node
probes, fabric ladder with bisection, soak. The monitor runs (and records history)
for the whole campaign. State lives in ``<data-dir>/campaign/state.json``: started
again after a crash it resumes, with the gap in the report's timeline. Reports go to
``<data-dir>/campaign/report.{json,md,html,xml}``. Ctrl-C ends every process the
campaign started on every node. Exit status: 0 all accepted, 1 some rejected, 2 the
campaign could not run, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.ladder import rung_sizes
from collectors.inventory import expand_hosts
from collectors.ssh import NodeTarget
from fleet.settings.contract_section import ContractSection
from gpufleet.config import Config, ConfigError
from gpufleet.session import add_fleet_arguments, default_data_dir, fail, load_fleet


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "accept",
        help="run an acceptance campaign on the fleet: inventory, health, probes, fabric, soak",
    )
    parser.add_argument("--nodes", default=None, help="a hostlist subset of the fleet")
    parser.add_argument("--soak", default=None, help="soak duration: 90s, 30m, 48h")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--fresh", action="store_true", help="start over: ignore a saved state")
    parser.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        default=None,
        metavar="REPORT.json",
        help="campaign reports side by side (runs nothing)",
    )
    add_fleet_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # The campaign's modules are imported here, not with the CLI: every other command
    # (serve, watch) would carry them (~0.09 s of start-up, ~3 MiB resident).
    from campaign.compare import compare_table, load_reports
    from gpufleet.accept_campaign import accept

    if args.compare:
        try:
            print(compare_table(load_reports(args.compare)), end="")
        except (OSError, ValueError) as exc:
            return fail(str(exc))
        return 0
    try:
        config, targets, options = load_fleet(args)
        chosen = choose_targets(targets, args.nodes)
        soak_s = parse_duration(args.soak) if args.soak else config.acceptance.soak_s
    except (ConfigError, ValueError) as exc:
        return fail(str(exc))
    if args.dry_run:
        print(plan_text(config, chosen, soak_s), end="")
        return 0
    data_dir = args.data_dir or default_data_dir()
    return asyncio.run(accept(config, chosen, options, data_dir, soak_s, fresh=args.fresh))


def choose_targets(targets: Sequence[NodeTarget], hostlist: str | None) -> list[NodeTarget]:
    """The configured targets the hostlist names; nothing outside the config.

    Raises:
        ValueError: the hostlist names a node the configuration does not list.
    """
    if hostlist is None:
        return list(targets)
    names = expand_hosts([hostlist])
    known = {t.name: t for t in targets}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--nodes: not in the configured fleet: {', '.join(unknown[:5])}")
    return [known[n] for n in names]


def parse_duration(text: str) -> float:
    """``90s``, ``30m``, ``48h``, ``2d`` or plain seconds.

    Raises:
        ValueError: anything else, or a negative duration.
    """
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    body, unit = (text[:-1], units[text[-1]]) if text and text[-1] in units else (text, 1.0)
    try:
        seconds = float(body) * unit
    except ValueError:
        raise ValueError(f"--soak {text!r}: expected a duration like 90s, 30m or 48h") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"--soak {text!r}: expected a duration like 90s, 30m or 48h")
    return seconds


def plan_text(config: Config, targets: Sequence[NodeTarget], soak_s: float) -> str:
    """What the campaign would do, stage by stage, without touching a node."""
    a, c = config.acceptance, config.contract or ContractSection()  # unset: its defaults
    # The pair round measures 2 nodes at once; the rungs above it run one group each.
    above = ", ".join(map(str, rung_sizes(len(targets))[1:]))
    rungs = f"pairs, then {above} nodes" if above else "pairs" if len(targets) > 1 else "none"
    names = ", ".join(t.name for t in targets[:8]) + (" ..." if len(targets) > 8 else "")
    return (
        f"Acceptance campaign on {len(targets)} nodes: {names}\n"
        f"1. inventory: {c.gpus_per_node} GPUs per node"
        f"{', model ' + c.gpu_model if c.gpu_model else ''} and the rest of [contract]\n"
        "2. health gate: no fail verdict, clean ECC, no pending remap, no fail-class XID\n"
        f"3. node probes: suite {config.probes.suite}, peers judged by the straggler rule\n"
        f"4. fabric ladder: {rungs}; floor {a.fabric_fraction:g} of the "
        f"{a.fabric_denominator} denominator; step timeout {a.step_timeout_s:g} s; bisection\n"
        f"5. soak: {soak_s:g} s of GEMM and all-reduce while the monitor records\n"
    )
