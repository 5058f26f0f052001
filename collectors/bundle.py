"""The node agent as one zipapp, built on the controller and uploaded once per content.

The archive holds ``collectors/agent`` (the sampler), ``collectors/sim`` (so demo
nodes can run ``--sim``), the pure-Python ``pynvml.py`` of the installed
``nvidia-ml-py``, a minimal ``collectors/__init__.py`` and a ``__main__.py``. Its
name carries a hash of exactly those bytes, so a node that already has
``agent-<sha12>.pyz`` never needs it again, and the build is byte-for-byte
reproducible (fixed timestamps and permissions, sorted entries).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import os
import tempfile
import zipfile
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parent  # .../collectors
_BUNDLED_PACKAGES = ("agent", "sim")
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
# Zip's epoch: every entry gets it, so the archive depends only on file contents.
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_SHEBANG = b"#!/usr/bin/env python3\n"

_COLLECTORS_INIT = b'"""gpufleet collectors, as bundled with the node agent."""\n'
_MAIN = b"""import sys

from collectors.agent.main import main

sys.exit(main())
"""


class BundleError(RuntimeError):
    """The agent bundle cannot be built (a bundled part is missing)."""


def _pynvml_source() -> bytes:
    spec = importlib.util.find_spec("pynvml")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise BundleError("nvidia-ml-py is not installed: pip install nvidia-ml-py")
    return Path(spec.origin).read_bytes()


def bundled_files() -> dict[str, bytes]:
    """Archive path -> content of every file the zipapp carries, in sorted order."""
    files = {
        "__main__.py": _MAIN,
        "collectors/__init__.py": _COLLECTORS_INIT,
        "pynvml.py": _pynvml_source(),
    }
    for package in _BUNDLED_PACKAGES:
        base = _PACKAGE_ROOT / package
        if not (base / "__init__.py").is_file():
            raise BundleError(f"{base} is not a package")
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix in _SKIPPED_SUFFIXES:
                continue
            files[path.relative_to(_PACKAGE_ROOT.parent).as_posix()] = path.read_bytes()
    return dict(sorted(files.items()))


def content_hash(files: dict[str, bytes]) -> str:
    """SHA-256 over every (path, content) pair: the zipapp's identity."""
    digest = hashlib.sha256()
    for name, data in sorted(files.items()):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_SHEBANG)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


@functools.lru_cache(maxsize=1)
def agent_zipapp_bytes() -> tuple[str, bytes]:
    """``("agent-<sha12>.pyz", content)``, built once per process for the SSH upload."""
    files = bundled_files()
    return f"agent-{content_hash(files)[:12]}.pyz", _archive(files)


def build_agent_zipapp(dest_dir: Path) -> Path:
    """Write ``agent-<sha12>.pyz`` into ``dest_dir`` (atomically) and return its path.

    An archive of that name already there is kept: the name is its content hash.
    """
    name, data = agent_zipapp_bytes()
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / name
    if target.is_file() and target.stat().st_size == len(data):
        return target
    fd, temp = tempfile.mkstemp(prefix=".agent-", suffix=".tmp", dir=dest_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, 0o755)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target
