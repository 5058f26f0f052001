"""The probe zipapp: ``probes-<sha12>.pyz``, built byte-for-byte reproducibly.

The kernels package is stored under its own name (``gpufleet_probe_kernels``) with a
root ``__main__.py``, fixed timestamps, fixed permissions and sorted entries, so the
same sources always give the same bytes and the same content hash. The hash names
the file on the node: it is uploaded once and reused until the kernels change.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
BUNDLED_PACKAGE = "gpufleet_probe_kernels"
# The earliest time a zip entry can carry: no build machine's clock leaks in.
FIXED_DATE_TIME = (1980, 1, 1, 0, 0, 0)
ROOT_MAIN = (
    b'"""gpufleet probes: python3 probes-<sha12>.pyz --suite quick --timeout 120."""\n'
    b"import sys\n\n"
    b"from " + BUNDLED_PACKAGE.encode() + b".cli import main\n\n"
    b"sys.exit(main())\n"
)


@dataclass(frozen=True, slots=True)
class ProbeBundle:
    """The zipapp's bytes and the hash that names it."""

    content: bytes
    sha256: str

    @property
    def name(self) -> str:
        """File name on the node: ``probes-<first 12 hex digits of the sha256>.pyz``."""
        return f"probes-{self.sha256[:12]}.pyz"


def build_probe_bundle(kernels_dir: Path = KERNELS_DIR) -> ProbeBundle:
    """Zip the kernel sources deterministically."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        _add(archive, "__main__.py", ROOT_MAIN)
        for source in _sources(kernels_dir):
            arcname = f"{BUNDLED_PACKAGE}/{source.relative_to(kernels_dir).as_posix()}"
            _add(archive, arcname, source.read_bytes())
    content = buffer.getvalue()
    return ProbeBundle(content=content, sha256=hashlib.sha256(content).hexdigest())


def _sources(kernels_dir: Path) -> list[Path]:
    return sorted(p for p in kernels_dir.rglob("*.py") if "__pycache__" not in p.parts)


def _add(archive: zipfile.ZipFile, arcname: str, data: bytes) -> None:
    info = zipfile.ZipInfo(arcname, date_time=FIXED_DATE_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16  # rw-r--r--, whatever the checkout's umask
    info.create_system = 3  # Unix, whichever OS builds it
    archive.writestr(info, data)
