"""``gpufleet`` command line: one module per command under ``gpufleet.commands``.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed namespace and returning an exit status.
Heavy imports (textual, polars, torch) happen inside the command, so ``gpufleet
--help`` and headless commands stay light.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from collectors.errors import FleetError
from collectors.sim.scenario import ScenarioError
from gpufleet import __version__, imports_done
from gpufleet.commands import (
    accept,
    check,
    demo,
    export,
    init,
    probe,
    report,
    serve,
    sla,
    watch,
    web,
)
from gpufleet.commands import help as help_command

COMMANDS = (demo, watch, serve, web, export, sla, report, probe, accept, check, init, help_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpufleet",
        description="Terminal fleet monitor for rented GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"gpufleet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    first = args_list[0] if args_list else ""
    if not first or (first.startswith("-") and first not in ("-h", "--help", "--version")):
        args_list.insert(0, "watch")  # watch is the default command
    args = parser.parse_args(args_list)
    imports_done()  # every command's modules are imported: keep them out of collections
    try:
        status: int = args.func(args)
    except (FleetError, ScenarioError) as exc:
        # Bad input (config, hostfile, scenario) is the operator's to fix: one line
        # naming where, never a traceback. Anything else is a bug and keeps its trace.
        print(f"gpufleet: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    raise SystemExit(main())
