"""``gpufleet web``: serve the dashboard to a browser (127.0.0.1, with a token)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "web", help="serve the dashboard to a browser (127.0.0.1, with a token)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("gpufleet web: not built yet", file=sys.stderr)
    return 2
