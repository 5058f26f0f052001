"""The tests' sshd starts again on another port when a neighbour took its port first."""

from __future__ import annotations

import socket

import asyncssh

from testkit.loopback.openssh import OpenSshServer
from testkit.ports import free_port


async def test_a_port_a_neighbour_listens_on_is_tried_again_elsewhere() -> None:
    with socket.socket() as neighbour:  # a parallel test's listener, bound first
        neighbour.bind(("127.0.0.1", 0))
        neighbour.listen()
        taken = neighbour.getsockname()[1]
        ports = [taken, free_port()]
        async with OpenSshServer(ports) as sshd:
            assert sshd.port == ports[1]
            async with asyncssh.connect(
                "127.0.0.1",
                port=sshd.port,
                client_keys=[sshd.client_key_path],
                known_hosts=sshd.known_hosts,
            ) as conn:
                result = await conn.run("echo up", check=True)
    assert result.stdout == "up\n"
