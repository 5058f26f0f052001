"""``gpufleet report``: what the money bought, delivered against contracted."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "report",
        help="what the money bought: delivered against contracted, GPU-hours by class, energy",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gpufleet report: not built yet", file=sys.stderr)
    return 2
