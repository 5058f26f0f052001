"""Running one of this tree's bench scripts against the code of another revision.

The script (its inputs, its series of states) stays this tree's; the code it measures is
a ``git archive`` of the revision, first on the path. The script prints its result as
JSON on its last line of output.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any


def run_script_in(rev: str, script: Path, root: Path) -> Any:
    """``script`` run with ``rev``'s tree of the repository at ``root`` on the path: the
    JSON of its last line of output."""
    with tempfile.TemporaryDirectory(prefix="other-tree-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", rev], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        code = f"import sys; sys.path.insert(0, {tmp!r}); import runpy; " + (
            f"runpy.run_path({str(script)!r}, run_name='__main__')"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": tmp},
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout.splitlines()[-1])
