"""``gpufleet-agent processes``: NVML's compute processes with user and command from /proc."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from collectors import sim
from collectors.agent.processes import MAX_COMMAND_BYTES, list_processes
from collectors.agent.wire import processes as processes_message
from collectors.process_list import decode_listing
from collectors.protocol import ProtocolError
from collectors.sim.procfs import job_command
from collectors.sim.workload import NodeWorkload

ROOT = Path(__file__).resolve().parents[2]
SEED = 7
AGENT = (sys.executable, "-m", "collectors.agent")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[sim.SimNode]:
    """node-001 at t=0 of seed 7, installed in this process's pynvml."""
    clock = sim.ManualClock(0.0)
    installed = sim.install(
        "node-001", None, seed=SEED, sysfs_root=tmp_path / "sys", clock=clock, refresh_s=None
    )
    pynvml.nvmlInit()
    try:
        yield installed
    finally:
        pynvml.nvmlShutdown()
        installed.close()


def running_job() -> tuple[int, frozenset[int], list[str]]:
    segment = NodeWorkload(SEED, "node-001", 8).segment_at(0.0)
    return segment.pid, segment.gpus, job_command(SEED, segment)


def test_the_agent_lists_the_simulated_job_on_each_of_its_gpus() -> None:
    pid, gpus, argv = running_job()
    assert gpus, "seed 7 starts node-001 with a job running"
    done = subprocess.run(
        [*AGENT, "processes", "--sim", "none", "--sim-node", "node-001", "--sim-seed", str(SEED)],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1, "one line, then the agent exits"
    listing = decode_listing("node-001", lines[0])
    assert {p.gpu for p in listing.processes} == set(gpus)
    me = pwd.getpwuid(os.getuid()).pw_name
    for process in listing.processes:
        assert (process.pid, process.user, process.command) == (pid, me, " ".join(argv))
        assert process.memory_used_bytes is not None and process.memory_used_bytes > 2**30
    assert listing.error is None


def test_a_process_gone_from_proc_is_listed_without_user_or_command(
    node: sim.SimNode, tmp_path: Path
) -> None:
    empty = tmp_path / "proc"
    empty.mkdir()
    body = list_processes(str(empty))
    assert body["processes"], "NVML still reports the job"
    assert all(p["user"] is None and p["command"] is None for p in body["processes"])


def test_an_unknown_uid_is_shown_as_its_number(node: sim.SimNode, tmp_path: Path) -> None:
    pid, _, _ = running_job()
    proc = tmp_path / "proc" / str(pid)
    proc.mkdir(parents=True)
    (proc / "status").write_text("Name:\tx\nUid:\t4000123\t4000123\t4000123\t4000123\n")
    (proc / "cmdline").write_bytes(b"x" * (MAX_COMMAND_BYTES * 2))
    body = list_processes(str(tmp_path / "proc"))
    first = body["processes"][0]
    assert (first["uid"], first["user"]) == (4000123, "4000123")
    assert len(first["command"]) == MAX_COMMAND_BYTES


def test_a_hostile_command_line_reaches_the_controller_as_visible_text(
    node: sim.SimNode, tmp_path: Path
) -> None:
    pid, _, _ = running_job()
    proc = tmp_path / "proc" / str(pid)
    proc.mkdir(parents=True)
    (proc / "status").write_text(f"Uid:\t{os.getuid()}\t0\t0\t0\n")
    # OSC 52 (clipboard), a retitle, clear screen, and an RLO that reverses the rest.
    hostile = b"python3\0\x1b]52;c;aGFja2Vk\x07\0\x1b]0;pwned\x07\x1b[2J\0\xe2\x80\xaeevil\0"
    (proc / "cmdline").write_bytes(hostile)
    body = list_processes(str(tmp_path / "proc"))
    line = json.dumps(processes_message(1.0, body)).encode()
    listing = decode_listing("node-001", line)
    command = listing.processes[0].command
    assert command is not None and "\x1b" not in command and "\u202e" not in command
    assert command.startswith("python3 \\x1b]52;c;aGFja2Vk\\x07")
    assert "\\u202eevil" in command


@pytest.mark.parametrize(
    "change",
    [
        {"pid": 0},
        {"pid": 2**40},
        {"gpu": -1},
        {"memory_used_bytes": -5},
        {"command": 17},
    ],
)
def test_the_decoder_refuses_impossible_values(change: dict[str, object]) -> None:
    process = {"gpu": 0, "pid": 42, "uid": 0, "user": "root", "memory_used_bytes": 1}
    process["command"] = "python3"
    process.update(change)
    line = json.dumps({"v": 1, "type": "processes", "t": 1.0, "processes": [process]})
    with pytest.raises(ProtocolError):
        decode_listing("n", line.encode())


def test_the_decoder_refuses_a_flood_of_processes() -> None:
    one = {"gpu": 0, "pid": 42, "user": "u", "memory_used_bytes": 1, "command": "c"}
    line = json.dumps({"v": 1, "type": "processes", "t": 1.0, "processes": [one] * 5000})
    with pytest.raises(ProtocolError):
        decode_listing("n", line.encode())


def test_gpu_errors_are_named_in_the_listing() -> None:
    line = json.dumps(
        {
            "v": 1,
            "type": "processes",
            "t": 1.0,
            "processes": [],
            "errors": [{"gpu": 3, "error": "NVMLError_GpuIsLost"}],
        }
    )
    assert decode_listing("n", line.encode()).error == "GPU 3: NVMLError_GpuIsLost"
