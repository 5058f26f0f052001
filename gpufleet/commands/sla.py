"""``gpufleet sla``: the month's SLA claim as Markdown, JSON or a self-contained HTML page."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs

from gpufleet.invocation import command_line
from gpufleet.output import emit, fail


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "sla",
        help="the month's SLA claim: availability, outages with evidence, credits",
        description="Compute a month's availability and provider credit from recorded history "
        f"(the math: `{command_line('help', 'sla')}`).",
    )
    parser.add_argument("-c", "--config", type=Path, default=None, help="configuration (TOML)")
    parser.add_argument("--data-dir", type=Path, default=None, help="history directory")
    parser.add_argument(
        "--month", default=None, help="YYYY-MM in UTC (default: this month, to date)"
    )
    parser.add_argument("--format", choices=("md", "json", "html"), default="md")
    parser.add_argument("-o", "--output", type=Path, default=None, help="file (default: stdout)")
    parser.add_argument(
        "--bundle",
        type=Path,
        default=None,
        metavar="FILE.zip",
        help="also write the evidence bundle: claim (md/html/json), contract, per-outage "
        "evidence, coverage log and a SHA-256 manifest "
        f"(`{command_line('help', 'sla')}`, filing a claim)",
    )
    parser.add_argument(
        "--sign",
        type=Path,
        default=None,
        metavar="KEY",
        help="sign the bundle's MANIFEST.json with this SSH private key "
        "(ssh-keygen -Y sign, namespace gpufleet-claim); needs --bundle",
    )
    parser.add_argument(
        "--verify",
        type=Path,
        default=None,
        metavar="BUNDLE",
        help="check a bundle: every file against MANIFEST.json, and its signature if signed",
    )
    parser.add_argument(
        "--signer",
        nargs=2,
        default=None,
        metavar=("ALLOWED_SIGNERS", "IDENTITY"),
        help="with --verify: the signature must be IDENTITY's as the ALLOWED_SIGNERS file "
        "(ssh-keygen's format) lists it",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cluster.history import history_root
    from gpufleet.config import ConfigError, default_config_path
    from gpufleet.config_file import read_config
    from ledger.sla.render import render_html, render_markdown
    from ledger.sla.report import build_report, to_json

    logging.basicConfig(level=logging.WARNING, format="gpufleet sla: %(message)s")
    if args.verify is not None:
        return _verify(args.verify, args.signer)
    if args.sign is not None and args.bundle is None:
        return fail("sla", "--sign signs the evidence bundle: give --bundle FILE.zip too")
    config_path = args.config or default_config_path()
    try:
        config = read_config(config_path, given=args.config is not None)
    except ConfigError as exc:
        return fail("sla", str(exc))
    if config.sla is None:
        return fail(
            "sla",
            f"{config_path}: no [sla] table: the contract is not configured"
            f" (its keys: `{command_line('help', 'config')}`)",
        )
    now = time.time()
    month = args.month or datetime.fromtimestamp(now, UTC).strftime("%Y-%m")
    data_dir = args.data_dir or Path(platformdirs.user_data_dir("gpufleet"))
    with history_root(data_dir) as root:  # shards' DATA/shard=K read as one fleet
        if not (root / "coverage").is_dir():
            return fail("sla", _no_history(data_dir, config.cluster.nats_url))
        try:
            report = build_report(root, config.sla, month, now)
        except ValueError as exc:
            return fail("sla", str(exc))
        names = None
        if args.bundle is not None:  # evidence from every shard's folder too
            from gpufleet import __version__
            from ledger.sla.bundle import write_bundle
            from ledger.sla.manifest import SigningError

            try:
                names = write_bundle(
                    report, root, args.bundle, generator=f"gpufleet {__version__}",
                    generated_ms=round(now * 1000), key=args.sign,
                )  # fmt: skip
            except SigningError as exc:
                return fail("sla", f"bundle not written: {exc}")
    if args.format == "json":
        text = json.dumps(to_json(report), indent=2) + "\n"
    elif args.format == "html":
        text = render_html(report)
    else:
        text = render_markdown(report)
    if names is not None:
        print(f"gpufleet sla: wrote {args.bundle} ({len(names)} files)", file=sys.stderr)
        if args.output is None and args.format == "md":
            return 0  # the bundle was asked for; the terminal does not need the claim too
    emit("sla", text, args.output)
    return 0


def _no_history(data_dir: Path, nats_url: str | None) -> str:
    """Why there is no claim here, in one line. A viewer of shards holds no history: the
    claim needs every recorded interval, which only the shards' directories keep (over
    NATS the dashboard's header gets the month to date, not the claim's evidence)."""
    if nats_url is None:
        return f"no recorded history in {data_dir} (record with watch or serve first)"
    from cluster.auth import redact

    return (
        f"no recorded history in {data_dir}: the claim is computed from the shards' history "
        f"(this config's shards publish to {redact(nats_url)}); give --data-dir DATA that "
        "holds their shard=K folders (on a shard's host or a shared filesystem)"
    )


def _verify(bundle: Path, signer: list[str] | None) -> int:
    from ledger.sla.manifest import Signers, SigningError, verify_bundle

    signers = None if signer is None else Signers(Path(signer[0]), signer[1])
    try:
        verdict = verify_bundle(bundle, signers)
    except SigningError as exc:
        return fail("sla", str(exc))
    for problem in verdict.problems:
        print(f"gpufleet sla: {problem}", file=sys.stderr)
    if not verdict.ok:
        print(f"gpufleet sla: {bundle}: FAILED", file=sys.stderr)
        return 1
    signed = f"signed by {verdict.signer}" if verdict.signer else "not signed"
    print(f"{bundle}: every file matches MANIFEST.json; {signed}")
    return 0
