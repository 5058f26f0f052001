"""A TCP relay on loopback between an SSH client and its server, for link faults.

The tests of keepalive (``collectors/ssh/asyncssh_costs``) need a link that goes silent
without closing; the tests of the channel-data fast path need one byte of the server's
ciphertext flipped. Both put this relay between the two ends.
"""

from __future__ import annotations

import asyncio


class LoopbackRelay:
    """Forwards TCP connections to ``target_port`` both ways, with two faults on request.

    :meth:`silence` drops every byte from then on, both ways (the link stays open);
    :meth:`flip_after` flips one bit of a byte the server sends.
    """

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self.silent = False
        self._flip_in: int | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        """Listen on an ephemeral loopback port; returns it."""
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def silence(self) -> None:
        """Drop every byte from now on, without closing either side."""
        self.silent = True

    def flip_after(self, count: int) -> None:
        """Flip the byte ``count`` bytes into what the server sends from now on."""
        self._flip_in = count

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._writers += [writer, up_writer]
        self._tasks += [
            asyncio.create_task(self._pump(reader, up_writer, from_server=False)),
            asyncio.create_task(self._pump(up_reader, writer, from_server=True)),
        ]

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, from_server: bool
    ) -> None:
        while data := await reader.read(65536):
            if self.silent:
                continue
            if from_server and self._flip_in is not None:
                if self._flip_in < len(data):
                    changed = bytearray(data)
                    changed[self._flip_in] ^= 0x01
                    data, self._flip_in = bytes(changed), None
                else:
                    self._flip_in -= len(data)
            writer.write(data)
            await writer.drain()
        writer.close()

    async def close(self) -> None:
        """Stop forwarding and close every connection and the listener."""
        for task in self._tasks:
            task.cancel()
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
