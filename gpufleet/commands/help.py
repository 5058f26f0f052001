"""``gpufleet help [TOPIC]``: the documentation that ships with gpufleet, in the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpufleet.docs import shipped_files, topic_text, topics
from gpufleet.session import fail


def register(sub: Any) -> None:
    parser = sub.add_parser("help", help="print a documentation topic (config, metrics, sla, ...)")
    parser.add_argument(
        "topic", nargs="?", default=None, help="a topic or a shipped file; none lists them"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print ``args.topic`` (0), list the topics and files (0), or say it is unknown (2)."""
    known = topics()
    files = shipped_files()
    if args.topic is None:
        print("gpufleet help TOPIC, where TOPIC is one of:\n  " + "\n  ".join(known))
        print("or a file to install elsewhere (gpufleet help FILE > where):")
        print("  " + "\n  ".join(files))
        return 0
    text = topic_text(args.topic)
    if text is None:
        listed = ", ".join(known + files)
        return fail(f"help: no topic {args.topic!r}; one of: {listed}")
    sys.stdout.write(text)
    return 0
