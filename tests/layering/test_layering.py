"""The headless rooms never load the terminal UI, even through a deferred import."""

import subprocess
import sys

import pytest

HEADLESS = [
    "collectors",
    "collectors.protocol",
    "fleet",
    "fleet.model",
    "fleet.facade",
    "probes",
    "history",
    "ledger",
    "exporter",
    "cluster",
]


@pytest.mark.parametrize("package", HEADLESS)
def test_headless_package_does_not_load_textual_or_rich(package: str) -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"root = importlib.import_module({package!r})\n"
        "for info in pkgutil.walk_packages(getattr(root, '__path__', []), root.__name__ + '.'):\n"
        "    if '.kernels' in info.name or info.name.endswith('__main__'):\n"
        "        continue\n"
        "    importlib.import_module(info.name)\n"
        "ui = ('textual', 'rich', 'tui', 'themes')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ui)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{package} pulled in {out.stdout.strip()}"
