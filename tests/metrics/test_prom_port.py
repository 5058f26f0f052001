"""The tests' servers start again on another port when a neighbour took theirs first."""

from __future__ import annotations

import socket
from pathlib import Path

from testkit.ports import free_port
from tests.metrics.prom import _config, listening, prometheus_command


async def test_a_port_taken_before_prometheus_binds_it_is_tried_again_elsewhere(
    tmp_path: Path,
) -> None:
    config = tmp_path / "prometheus.yml"
    config.write_text(_config([]))
    command = prometheus_command(config, tmp_path)
    with socket.socket() as neighbour:  # a parallel test's socket, bound first
        neighbour.bind(("127.0.0.1", 0))
        taken = neighbour.getsockname()[1]
        ports = [taken, free_port()]
        async with listening(command, tmp_path / "prometheus.log", "/-/ready", ports) as (
            process,
            port,
        ):
            assert port == ports[1] and process.returncode is None
