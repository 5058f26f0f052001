"""A probe cancelled as its connection comes up does not start (real SSH, real wait_for).

On Python 3.11 ``asyncio.wait_for`` (asyncssh's connect waits for its handshake under
it) drops a cancellation that arrives in the same loop turn as the result. The runner
then went on to upload and start the probe the operator had cancelled. The connect here
is the real one, and its result is then handed over through the real ``wait_for`` in
the turn in which the operator cancels: that race, made on purpose.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncssh

from collectors.ssh import NodeTarget, connect_node
from probes.bundle import ProbeBundle
from probes.runner import ProbeRunner, ProbeTarget
from probes.settings import ProbeSettings

from .conftest import OPTIONS, sim_fleet


async def test_a_cancel_that_arrives_with_the_connection_stops_the_probe_before_it_starts(
    tmp_path: Path, bundle: ProbeBundle
) -> None:
    runners: list[ProbeRunner] = []

    async def connect_as_the_operator_cancels(target: ProbeTarget) -> asyncssh.SSHClientConnection:
        assert isinstance(target, NodeTarget)
        conn = await connect_node(target, OPTIONS)
        loop = asyncio.get_running_loop()
        established = loop.create_future()
        loop.call_soon(established.set_result, conn)
        assert runners[0].cancel(target.name)  # the operator, in that same loop turn
        return await asyncio.wait_for(established, 10)

    settings = ProbeSettings(python=sys.executable, timeout_s=60.0)
    runners.append(ProbeRunner(connect_as_the_operator_cancels, settings, bundle))
    async with sim_fleet(tmp_path, gpus=1) as fleet:
        (target,) = fleet.targets()
        report = await asyncio.wait_for(runners[0].run(target, "quick"), 60)
        execs = fleet.nodes["node-001"].execs
    assert report.status == "cancelled", report
    assert execs == 0  # nothing was uploaded or started on the node
    assert not runners[0].busy("node-001")
