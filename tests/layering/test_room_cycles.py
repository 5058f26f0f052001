"""No two files of one room import each other, directly or through others.

import-linter's layers contract orders the rooms; inside a room only grimp's graph shows
a cycle. Imports under ``if TYPE_CHECKING:`` are left out: they never run.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"][
    "wheel"
]["packages"]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*ROOMS, exclude_type_checking_imports=True)


def cycles(graph: grimp.ImportGraph, room: str) -> list[tuple[str, str]]:
    """Pairs of modules of ``room`` that reach each other."""
    modules = sorted(m for m in graph.modules if m == room or m.startswith(room + "."))
    found = []
    for module in modules:
        for other in graph.find_upstream_modules(module):
            if (
                other.startswith(room)
                and other > module
                and module in set(graph.find_upstream_modules(other))
            ):
                found.append((module, other))
    return found


@pytest.mark.parametrize("room", ROOMS)
def test_no_import_cycle_inside_a_room(graph: grimp.ImportGraph, room: str) -> None:
    assert cycles(graph, room) == []


def test_the_cycle_finder_sees_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "room"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from room import b\n")
    (package / "b.py").write_text("def f():\n    from room import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cycles(grimp.build_graph("room"), "room") == [("room.a", "room.b")]
