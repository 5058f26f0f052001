"""The zipapp the controller uploads: deterministic, self-contained, runs with --help and --sim."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from collectors.bundle import agent_zipapp_bytes, build_agent_zipapp, bundled_files, content_hash
from collectors.protocol import Bye, Hello, Sample, decode_line

# The oldest interpreter the agent supports, where this machine has one (pyenv).
VERMIN = str(Path(sys.executable).with_name("vermin"))
OLDEST = Path.home() / ".pyenv" / "versions" / "3.8.18" / "bin" / "python"


def test_the_name_is_the_content_hash_and_builds_are_identical(tmp_path: Path) -> None:
    first = build_agent_zipapp(tmp_path / "a")
    second = build_agent_zipapp(tmp_path / "b")
    assert first.name == second.name == f"agent-{content_hash(bundled_files())[:12]}.pyz"
    assert first.read_bytes() == second.read_bytes()
    name, data = agent_zipapp_bytes()
    assert name == first.name and data == first.read_bytes()


def test_the_archive_holds_agent_sim_pynvml_and_a_main(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_agent_zipapp(tmp_path)) as archive:
        names = set(archive.namelist())
        infos = archive.infolist()
    assert {"__main__.py", "pynvml.py", "collectors/__init__.py"} <= names
    assert {"collectors/agent/main.py", "collectors/agent/fields.py"} <= names
    assert "collectors/sim/__init__.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "collectors/protocol.py" not in names  # the controller side stays home
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_the_zipapp_prints_help_on_the_oldest_python_available(tmp_path: Path) -> None:
    python = str(OLDEST) if OLDEST.exists() else sys.executable
    done = subprocess.run(
        [python, str(build_agent_zipapp(tmp_path)), "--help"],
        cwd=tmp_path,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert b"--interval" in done.stdout


def test_the_zipapp_streams_a_simulated_node(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            *(sys.executable, str(build_agent_zipapp(tmp_path))),
            # The packaged demo scenario is read from inside the archive.
            *("--sim", "default", "--sim-node", "node-003"),
            *("--interval", "0.05", "--max-samples", "2"),
        ],
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    messages = [decode_line(line) for line in out.splitlines()]
    assert isinstance(messages[0], Hello) and len(messages[0].gpus) == 8
    assert sum(isinstance(m, Sample) for m in messages) == 2
    assert isinstance(messages[-1], Bye)


def test_the_agent_source_keeps_to_python_3_8() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [VERMIN, "-t=3.8-", "--no-tips", "--violations", "collectors/agent"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Minimum required versions: 3." in done.stdout
