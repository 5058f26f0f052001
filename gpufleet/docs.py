"""The user documentation shipped with gpufleet (``gpufleet help TOPIC`` prints it).

The wheel carries ``docs/`` as ``gpufleet/docs`` (pyproject's force-include); a
source checkout reads the repository's ``docs/``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).parent


def docs_dir() -> Path | None:
    """Where the Markdown documentation is, installed or in a checkout."""
    for candidate in (_PACKAGE / "docs", _PACKAGE.parent / "docs"):
        if (candidate / "config.md").is_file():
            return candidate
    return None


def topics() -> list[str]:
    """Every topic ``gpufleet help`` can print (the Markdown files' names)."""
    where = docs_dir()
    return [] if where is None else sorted(p.stem for p in where.glob("*.md"))


def topic_text(topic: str) -> str | None:
    """The Markdown of ``topic``, or None when there is no such topic."""
    where = docs_dir()
    if where is None or topic not in topics():
        return None
    return (where / f"{topic}.md").read_text(encoding="utf-8")
