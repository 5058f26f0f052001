"""docs/development.md names only files, folders and modules that exist.

The guide's recipes are lists of paths; when code moves and the guide does not, this
test says which path went stale.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "development.md"
# Top-level entries a path in the guide may start with: the rooms and the workshop.
TOP = (
    "gpufleet", "tui", "themes", "cluster", "exporter", "ledger", "history", "fleet",
    "probes", "collectors", "testkit", "tests", "bench", "docs", "scripts",
)  # fmt: skip
FILES = ("Makefile", "pyproject.toml", "README.md", "BENCHMARKS.md", "CHANGELOG.md")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_MODULE = re.compile(r"^[a-z_]+(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _words() -> list[str]:
    """Every whitespace-separated word inside a backticked span of the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    return [word for span in _BACKTICKED.findall(text) for word in span.split()]


def _paths(words: list[str]) -> set[str]:
    found = set()
    for word in words:
        word = word.split("::")[0].rstrip(".,:;)")
        head = word.split("/")[0]
        if word in FILES or ("/" in word and head in TOP and "NAME" not in word):
            found.add(word)
    return found


def _modules(words: list[str]) -> set[str]:
    return {w for w in words if _MODULE.match(w) and w.split(".")[0] in TOP}


def _module_exists(dotted: str) -> bool:
    """True when some leading part of ``dotted`` is a module file or a package."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def test_the_guide_names_paths() -> None:
    # The extraction itself works: the guide is mostly paths.
    assert len(_paths(_words())) > 60


def test_every_path_in_the_guide_exists() -> None:
    missing = sorted(
        p for p in _paths(_words()) if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())
    )
    assert not missing, f"docs/development.md names paths that do not exist: {missing}"


def test_every_module_in_the_guide_exists() -> None:
    missing = sorted(m for m in _modules(_words()) if not _module_exists(m))
    assert not missing, f"docs/development.md names modules that do not exist: {missing}"
