"""Sending a body that is rendered while it is sent: the event loop renders it in slices.

A scrape of 1,000 nodes is ~57 MB of text and ~0.3 s of CPU. Rendered whole in a
worker thread it held ~60 MB at once, and the worker and the event loop took turns
with the interpreter: after each socket wait the loop could wait up to the switch
interval (5 ms) to get it back, the likely reason ingest fell behind during scrapes at
2,000 nodes (ticks 1.6-3.1 s apart). Here the loop itself advances the renderer part
by part (:meth:`exporter.text.ExpositionRenderer.stream_parts`), hands itself to
other tasks after every slice of work (:data:`SLICE_S`, longer once the scrape falls
behind: :func:`slice_length`), and writes the parts as HTTP/1.1
chunks (gzip compressed incrementally when asked), so neither the body nor the wait
of other tasks grows with the fleet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

from exporter.gzip_body import Compressor

log = logging.getLogger(__name__)

SLICE_S = 0.004
"""Rendering done before the loop is handed to other tasks (see :func:`hand_over`), at
the start of a scrape: a socket read or timer that comes due during a slice runs right
after it. Under the interpreter's 5 ms switch interval (what a worker thread could hold
the loop for); at 1 ms a 2,000-node scrape got so small a share of a busy loop that it
took 5-9 s."""
SLICE_GRACE_S = 1.0
"""A scrape this young keeps :data:`SLICE_S` slices (at 1,000 nodes one takes ~0.3-1 s)."""
SLICE_GROWTH = 0.1
"""Seconds of slice added per second the scrape has run past its grace."""
SLICE_MAX_S = 0.02
"""The longest slice: twice the ingest pacer's (:data:`collectors.ssh.pacing.SLICE_S`).
At 100 ms a long scrape took ten turns of the loop for each of the pacer's: at 3,000
nodes 7-21 % of samples were lost; at 20 ms 0.4-0.6 %, and scrapes still ended in 3-9 s,
inside Prometheus' 10 s timeout (bench/bench_fleet.py --nodes 3000, BENCHMARKS.md)."""
FLUSH_BYTES = 128 * 1024
"""Rendered text gathered into one HTTP chunk (one gzip call, one socket write)."""
DRAIN_TIMEOUT_S = 30.0
"""A client that reads nothing for this long is dropped: a scrape holds the renderer."""


class StreamAborted(Exception):
    """The body could not be finished; the connection must be closed, not reused."""


def slice_length(age_s: float) -> float:
    """How long to render before handing the loop over, for a scrape ``age_s`` old.

    On a loop busy with ingest each hand-over waits for a round of other work (at 3,000
    nodes a 4 ms slice got ~4 % of the loop and a scrape took 25 s, past Prometheus' 10 s
    timeout). A scrape that falls behind (older than :data:`SLICE_GRACE_S`) so gets a
    larger share: its slice grows with its age, up to :data:`SLICE_MAX_S`, and it still
    hands over after each slice.
    """
    return min(SLICE_MAX_S, SLICE_S + SLICE_GROWTH * max(0.0, age_s - SLICE_GRACE_S))


async def send_parts(
    writer: asyncio.StreamWriter,
    first: bytes,
    rest: Iterator[bytes],
    *,
    began: float,
    compressor: Compressor | None,
    chunked: bool,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Write ``first`` then each part of ``rest`` as it is rendered, in HTTP chunks when
    ``chunked`` (else as a body delimited by closing the connection); paced as
    :func:`render_parts` paces it.

    Raises:
        StreamAborted: rendering failed part-way (logged); the body is cut short, which
            a client sees as a failed scrape.
    """

    async def send(data: bytes) -> None:
        await send_data(writer, data, chunked)

    await render_parts(first, rest, began=began, compressor=compressor, emit=send, clock=clock)
    if chunked:
        writer.write(b"0\r\n\r\n")


async def render_parts(
    first: bytes,
    rest: Iterator[bytes],
    *,
    began: float,
    compressor: Compressor | None,
    emit: Callable[[bytes], Awaitable[None]],
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Advance ``rest`` after ``first`` and ``emit`` the text (compressed when
    ``compressor`` is given) every :data:`FLUSH_BYTES`, then the tail. ``began`` is when
    the loop was last handed to other tasks (``clock()``, before ``first``); slices of
    rendering between hand-overs are :func:`slice_length` of the scrape's age.

    Raises:
        StreamAborted: rendering failed part-way (logged).
    """
    pending, size = [first], len(first)
    slice_started, length = began, SLICE_S
    try:
        while True:
            if clock() - slice_started >= length:
                await hand_over()  # other tasks (the SSH streams, the tick) run now
                slice_started = clock()
                length = slice_length(slice_started - began)
            part = next(rest, None)
            if part is None:
                break
            pending.append(part)
            size += len(part)
            if size >= FLUSH_BYTES:
                await emit(_packed(pending, compressor))
                pending, size = [], 0
    except (ConnectionError, TimeoutError):
        raise
    except Exception as error:  # a rendering bug: the status line is sent, cut the body
        log.exception("rendering /metrics failed part-way")
        raise StreamAborted from error
    tail = _packed(pending, compressor)
    if compressor is not None:
        tail += compressor.flush()
    await emit(tail)


async def hand_over() -> None:
    """Let every task that is ready or became ready run before this one goes on.

    ``asyncio.sleep(0)`` puts this task back in the ready queue before the loop looks
    at the sockets and timers, so a socket read that became ready during a slice waits
    for the next slice too. A timer due now is taken up with the sockets' callbacks and
    other due timers, and this task resumes after all of them.
    """
    loop = asyncio.get_running_loop()
    resumed = loop.create_future()
    loop.call_at(loop.time(), _resolve, resumed)
    await resumed


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _packed(parts: list[bytes], compressor: Compressor | None) -> bytes:
    data = b"".join(parts)
    return data if compressor is None else compressor.compress(data)


async def send_data(writer: asyncio.StreamWriter, data: bytes, chunked: bool) -> None:
    """``data`` as one HTTP chunk (or plain bytes when not ``chunked``), flushed."""
    if not data:
        return  # an empty chunk would end a chunked body
    if chunked:
        writer.writelines((b"%x\r\n" % len(data), data, b"\r\n"))
    else:
        writer.write(data)
    async with asyncio.timeout(DRAIN_TIMEOUT_S):
        await writer.drain()  # one flush in flight: memory stays bounded by a slow reader
