"""``gpufleet init HOST...``: write a commented starter configuration for these hosts.

Every table and key of the configuration is written with its documentation (the
field docstrings of ``gpufleet.config``, the same text as ``gpufleet help config``)
and its default, commented out; only ``[fleet] hosts`` is set. The result is
checked by the same loader every command uses before it is written.
"""

from __future__ import annotations

import argparse
import datetime
import json
import textwrap
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpufleet.config import Config, ConfigError, default_config_path, parse_config
from gpufleet.invocation import command_line
from gpufleet.session import fail

WIDTH = 88
SET_KEYS = {("fleet", "hosts")}


def register(sub: Any) -> None:
    parser = sub.add_parser("init", help="write a commented starter config for the given hosts")
    parser.add_argument("hosts", nargs="+", metavar="HOST", help="hostnames or gpu-[001-008]")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help=f"where to write it (default: {default_config_path()})",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the starter config: 0 when written, 2 for bad hosts or an existing file."""
    path: Path = args.output or default_config_path()
    text = starter_config(args.hosts)
    try:
        parse_config(tomllib.loads(text), source="the hosts given")
    except ConfigError as exc:
        return fail(f"init: {exc}")
    if path.exists() and not args.force:
        return fail(f"init: {path} exists; pass --force to overwrite it, or -o FILE")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return fail(f"init: cannot write {path}: {exc.strerror}")
    config_flag = () if args.output is None else ("-c", path)
    print(f"gpufleet init: wrote {path}; next, try every node once:")
    print(f"  {command_line('check', *config_flag)}")
    return 0


def starter_config(hosts: list[str]) -> str:
    """The commented TOML of a configuration that watches ``hosts``."""
    today = datetime.date.today().isoformat()
    out = [
        f"# gpufleet configuration, written by `gpufleet init` on {today}.",
        "# Each key is shown with its default, commented out: uncomment a line to change it.",
        "# Every key is described in `gpufleet help config`.",
    ]
    values = {("fleet", "hosts"): hosts}
    for name, field in Config.model_fields.items():
        model = _model_of(field.annotation)
        out.append("")
        optional = field.default is None  # a table that is absent unless written ([sla])
        out.extend(_comment(field.description or "", "# "))
        out.append(f"{'# ' if optional else ''}[{name}]")
        for key, sub in model.model_fields.items():
            out.append("")
            out.extend(_comment(sub.description or "", "# "))
            if (name, key) in values:
                out.append(f"{key} = {_toml(values[name, key])}")
            else:
                out.append(f"# {key} = {_example(sub)}")
    return "\n".join(out) + "\n"


def _model_of(annotation: Any) -> type[BaseModel]:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"{annotation!r} is not a config table")


def _comment(text: str, prefix: str) -> list[str]:
    paragraph = " ".join(text.split()).replace("``", "`")
    return [prefix + line for line in textwrap.wrap(paragraph, WIDTH - len(prefix))]


def _example(field: Any) -> str:
    """The field's default as TOML, or what kind of value it takes when it has none."""
    if field.default is PydanticUndefined and field.default_factory is None:
        return "...  # required in this table"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is None:
        return "...  # not set by default"
    if isinstance(value, BaseModel) or (isinstance(value, dict) and value):
        return "...  # a table: see `gpufleet help config`"
    if isinstance(value, dict):
        return "{}  # none by default"
    return _toml(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string: JSON's escapes are TOML's
