"""The user documentation shipped with gpufleet (``gpufleet help TOPIC`` prints it).

The wheel carries ``docs/`` as ``gpufleet/docs`` (pyproject's force-include); a
source checkout reads the repository's ``docs/``. Besides the Markdown topics it
holds files an operator installs elsewhere (the Grafana dashboard, the systemd
unit); ``gpufleet help FILE > where`` copies one out of a pip-installed gpufleet.
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


def shipped_files() -> list[str]:
    """The other shipped files, as paths relative to the docs (``grafana/gpufleet.json``)."""
    where = docs_dir()
    if where is None:
        return []
    return sorted(
        p.relative_to(where).as_posix()
        for p in where.rglob("*")
        if p.is_file() and p.suffix != ".md" and "__pycache__" not in p.parts
    )


def topic_text(topic: str) -> str | None:
    """The text of ``topic`` (a Markdown topic or a shipped file), None when unknown."""
    where = docs_dir()
    if where is None:
        return None
    # Only names from the listings: a topic is never a path walked from user input.
    if topic in topics():
        return (where / f"{topic}.md").read_text(encoding="utf-8")
    if topic in shipped_files():
        return (where / topic).read_text(encoding="utf-8")
    return None
