"""The configuration reference in docs/config.md, generated from the field docstrings.

Each section's key table sits between ``<!-- keys:NAME -->`` and ``<!-- /keys -->``
markers; ``python -m gpufleet.config.reference docs/config.md`` rewrites them, and a test
fails when the file and the models disagree. The docstrings stay the one source.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpufleet.config.model import Config

GENERATED = (
    "health",
    "history",
    "sla",
    "ui",
    "metrics",
    "probes",
    "alerts",
    "cluster",
    "contract",
    "acceptance",
    "energy",
    "jobs",
    "web",
)
_BLOCK = re.compile(r"(<!-- keys:(\w+) -->\n).*?(<!-- /keys -->)", re.S)


def _section_model(name: str) -> type[BaseModel]:
    annotation: Any = Config.model_fields[name].annotation
    for candidate in getattr(annotation, "__args__", (annotation,)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"[{name}] is not a config table")


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, tuple | list | dict) and not value:
        return "empty"
    return f"`{json.dumps(value, default=str)}`"


def key_table(name: str) -> str:
    """The Markdown table of ``[name]``: key, default, and the field's docstring."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, field in _section_model(name).model_fields.items():
        meaning = " ".join((field.description or "").split()).replace("|", "\\|")
        rows.append(f"| `{key}` | {_default(field)} | {meaning} |")
    return "\n".join(rows) + "\n"


def render(text: str) -> str:
    """``text`` with every marked key table regenerated."""
    return _BLOCK.sub(lambda m: m.group(1) + key_table(m.group(2)) + m.group(3), text)


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "docs/config.md")
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
