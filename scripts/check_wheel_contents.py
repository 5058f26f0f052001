"""Fail when a built wheel carries test support: ``check_wheel_contents.py WHEEL``.

The wheel may hold only the packages pyproject.toml names for it (and its dist-info);
no shipped module may import ``testkit`` or ``tests`` (an installed gpufleet has
neither), and none of the test doubles that once lived in the product may come back.
Run by scripts/check-wheel.sh (``make test``); stdlib only.
"""

from __future__ import annotations

import ast
import sys
import tomllib
import zipfile
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TEST_SUPPORT = ("testkit", "tests")
# Where test doubles used to sit inside the product (moved to testkit/ since).
FORMER_HOMES = (
    "collectors/loopback/",
    "history/synthetic.py",
    "tui/demo_fleet.py",
    "tui/demo_source.py",
    "tui/preview.py",
)


def wheel_packages(pyproject: Path = PYPROJECT) -> set[str]:
    """The top-level packages the wheel is configured to ship."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    packages = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return {p.split("/")[0] for p in packages}


def imports_test_support(source: bytes) -> list[str]:
    """The test-support modules ``source`` imports (absolute imports only)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [name for name in names if name.split(".")[0] in TEST_SUPPORT]
    return found


def problems(wheel: Path, packages: set[str]) -> list[str]:
    """One line per thing in ``wheel`` that is test support or not product."""
    found = []
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            top = name.split("/")[0]
            if top not in packages and not top.endswith(".dist-info"):
                found.append(f"{name}: not in the wheel's packages {sorted(packages)}")
            elif name.startswith(FORMER_HOMES):
                found.append(f"{name}: a test double's former home in the product")
            elif name.endswith(".py"):
                found += [
                    f"{name}: imports {module} (test support, absent once installed)"
                    for module in imports_test_support(archive.read(name))
                ]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_wheel_contents.py WHEEL", file=sys.stderr)
        return 2
    wheel = Path(argv[0])
    found = problems(wheel, wheel_packages())
    for line in found:
        print(f"check-wheel: {line}", file=sys.stderr)
    if found:
        return 1
    print(f"check-wheel: {wheel.name} carries no test support")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
