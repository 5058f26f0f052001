"""``gpufleet accept``: an acceptance campaign on the fleet, with a report."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "accept",
        help="run an acceptance campaign on the fleet: inventory, health, probes, fabric, soak",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gpufleet accept: not built yet", file=sys.stderr)
    return 2
