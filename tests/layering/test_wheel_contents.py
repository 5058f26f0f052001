"""The installed product carries no test support (scripts/check_wheel_contents.py).

``make test`` runs the checker on the wheel it builds (scripts/check-wheel.sh); these
tests run it on the source tree packed as the wheel packs it, and on wheels that
smuggle test support in.
"""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_wheel_contents.py"
PRODUCT = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"][
        "wheel"
    ]["packages"]
)
METADATA = "gpufleet-0.1.0.dist-info/METADATA"


def check(wheel: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), str(wheel)], capture_output=True, text=True, check=False
    )


def pack(wheel: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(METADATA, "Name: gpufleet\n")
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def test_the_product_packed_as_the_wheel_packs_it_carries_no_test_support(
    tmp_path: Path,
) -> None:
    files = {
        path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for package in PRODUCT
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert "collectors/demo/fleet.py" in files  # the demo's simulator stays in the product
    result = check(pack(tmp_path / "gpufleet.whl", files))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("testkit/loopback/fleet.py", "X = 1\n"),
        ("tests/fleet/feed.py", "X = 1\n"),
        ("collectors/loopback/behaviour.py", "X = 1\n"),
        ("tui/demo_fleet.py", "X = 1\n"),
        ("collectors/demo/fleet.py", "from testkit.loopback import LoopbackFleet\n"),
        ("gpufleet/runtime.py", "def f():\n    import tests.runtime.waits\n"),
    ],
)
def test_the_checker_refuses_a_wheel_with_test_support(
    tmp_path: Path, name: str, text: str
) -> None:
    wheel = pack(tmp_path / "gpufleet.whl", {"collectors/__init__.py": "", name: text})
    result = check(wheel)
    assert result.returncode == 1
    assert result.stderr.count("check-wheel: ") == 1
    assert f"check-wheel: {name}: " in result.stderr


def test_the_checker_passes_a_clean_wheel(tmp_path: Path) -> None:
    wheel = pack(tmp_path / "gpufleet.whl", {"collectors/demo/fleet.py": "import asyncssh\n"})
    result = check(wheel)
    assert result.returncode == 0, result.stderr
    assert "carries no test support" in result.stdout


def test_importing_every_product_module_loads_no_test_support() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"for package in {PRODUCT!r}:\n"
        "    root = importlib.import_module(package)\n"
        "    for info in pkgutil.walk_packages(root.__path__, package + '.'):\n"
        "        if '.kernels' in info.name or info.name.endswith('__main__'):\n"
        "            continue\n"
        "        importlib.import_module(info.name)\n"
        "support = ('testkit', 'tests')\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in support)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
