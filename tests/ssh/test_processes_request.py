"""The node screen's process request: one verified agent run over the node's own connection."""

from __future__ import annotations

import os
import pwd
import shlex
from pathlib import Path

from collectors.sim.procfs import job_command
from collectors.sim.workload import NodeWorkload
from collectors.ssh import SshFleet
from collectors.ssh.node import NodeSession
from collectors.ssh.processes import processes_command, request_processes
from collectors.ssh.upload import verified_argv
from testkit.loopback import LoopbackFleet
from testkit.loopback.harness import fast_options
from testkit.loopback.recorder import UpdateRecorder
from tests.hostile.shellnode import options_with_agent, shell_fleet
from tests.runtime.waits import wait_until

# A stand-in agent: streams nothing (the session stays connected), and answers
# ``processes`` with a command line full of terminal escapes, or with a flood.
HOSTILE_AGENT = b"""
import json, sys, time
if "processes" in sys.argv:
    if "--flood" in sys.argv:
        while True:
            sys.stdout.write("x" * 65536)
    evil = "train.py \\x1b]52;c;aGFja2Vk\\x07\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil"
    print(json.dumps({"v": 1, "type": "processes", "t": time.time(), "processes": [
        {"gpu": 0, "pid": 4242, "uid": 0, "user": "r\\x1b[31moot",
         "memory_used_bytes": 1073741824, "command": evil}]}))
    sys.exit(0)
sys.stdin.read()  # streams nothing until its session closes: the stimulus
"""


def uploaded(session: NodeSession, home: Path) -> bool:
    """Connected, and the agent file is on the node (it is renamed into place whole)."""
    return session.conn is not None and (home / session.agent_file()[0]).is_file()


async def test_a_simulated_node_lists_its_running_job(tmp_path: Path) -> None:
    options = fast_options(agent_bundle=None, connect_timeout=10.0)
    async with LoopbackFleet(1, gpus=8, mode="agent", seed=7) as loopback:
        rec = UpdateRecorder()
        async with SshFleet(loopback.targets(interval=0.5), rec, options) as fleet:
            await rec.wait_until(lambda: rec.samples["node-001"] >= 1, 60)
            session = fleet.session("node-001")
            assert session is not None
            assert loopback.simulation is not None
            before = loopback.simulation.elapsed
            listing = await request_processes(session)
            after = loopback.simulation.elapsed
    workload = NodeWorkload(7, "node-001", 8)
    jobs = {workload.segment_at(t) for t in (before, after)}
    assert listing.error is None, listing.error
    assert listing.processes, "a job runs on the simulated node"
    me = pwd.getpwuid(os.getuid()).pw_name
    commands = {" ".join(job_command(7, job)) for job in jobs}
    for process in listing.processes:
        assert process.pid in {job.pid for job in jobs}
        assert process.gpu in set().union(*(job.gpus for job in jobs))
        assert process.user == me and process.command in commands


async def test_the_request_is_quoted_verified_and_its_answer_sanitised(tmp_path: Path) -> None:
    async with shell_fleet(["evil"], tmp_path) as shells:
        rec = UpdateRecorder()
        options = options_with_agent(HOSTILE_AGENT)
        async with SshFleet([shells.target("evil")], rec, options) as fleet:
            session = fleet.session("evil")
            assert session is not None
            await wait_until(lambda: uploaded(session, tmp_path / "evil"), 30)
            listing = await request_processes(session)
            command = processes_command(session)
    (process,) = listing.processes
    assert process.command is not None and process.user is not None
    assert "\x1b" not in process.command + process.user and "\u202e" not in process.command
    assert process.command.startswith("train.py \\x1b]52;c;aGFja2Vk\\x07")
    assert process.user == "r\\x1b[31moot"
    # What the node's shell received parses back to exactly the bootstrap's words.
    assert command in shells.nodes["evil"].commands
    path, digest = session.agent_file()
    assert shlex.split(command) == verified_argv("python3", path, digest, ["processes"])


async def test_a_changed_agent_file_is_refused_and_a_flood_is_cut(tmp_path: Path) -> None:
    async with shell_fleet(["a", "b"], tmp_path) as shells:
        rec = UpdateRecorder()
        targets = [shells.target("a"), shells.target("b", agent_args=("--flood",))]
        async with SshFleet(targets, rec, options_with_agent(HOSTILE_AGENT)) as fleet:
            sessions = [fleet.session("a"), fleet.session("b")]
            assert sessions[0] is not None and sessions[1] is not None
            a, b = sessions[0], sessions[1]
            await wait_until(lambda: uploaded(a, tmp_path / "a") and uploaded(b, tmp_path / "b"))
            agent = tmp_path / "a" / a.agent_file()[0]
            agent.chmod(0o700)
            agent.write_bytes(b"import sys; print('planted'); sys.exit(0)\n")
            refused = await request_processes(a)
            flooded = await request_processes(b, timeout_s=3.0)
    assert refused.processes == () and refused.error is not None
    assert "does not match its SHA-256" in refused.error
    assert flooded.processes == () and flooded.error is not None
    assert "within 3 s" in flooded.error or "line cap" in flooded.error


async def test_a_node_that_is_not_connected_says_why(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        targets = loopback.targets()
    rec = UpdateRecorder()  # the fleet above is gone: nobody listens on its port
    async with SshFleet(targets, rec, fast_options()) as fleet:
        await rec.wait_until(lambda: rec.status("node-001") == "unreachable", 30)
        session = fleet.session("node-001")
        assert session is not None
        listing = await request_processes(session)
    assert listing.processes == () and listing.error is not None
    assert listing.error.startswith("not connected:")
