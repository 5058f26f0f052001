"""`gpufleet sla`: not built yet."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("sla", help="(not built yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gpufleet sla: not built yet", flush=True)
    return 2
