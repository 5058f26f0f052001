"""Launching one fabric step over the campaign's SSH sessions, and ending it.

One connection per node is opened on first use and kept for the campaign; each step
starts the probe bundle's fabric program on every node of the step (``--nccl-worker``
with a ``fabric`` spec), the first node holding the rendezvous. The program prints its
pid first (``echo $$; exec``) and leads its own process group, so a step that runs
past its timeout, and every step still running on Ctrl-C, is ended on every node with
one ``kill`` of that group over a second channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import asyncssh

from campaign.ladder import Purpose
from campaign.model import FabricStep
from collectors.ssh import NodeTarget
from collectors.ssh.upload import ensure_uploaded, sha256_hex, verified_argv
from probes.bundle import ProbeBundle, build_probe_bundle
from probes.command import kill_command, shell_word

log = logging.getLogger(__name__)
Connector = Callable[[NodeTarget], Awaitable[asyncssh.SSHClientConnection]]
# Past the program's own watchdog, how long the controller waits before it ends the step.
KILL_GRACE_S = 5.0
MAX_LINE = 1 << 16


@dataclass(frozen=True, slots=True)
class FabricOptions:
    """How fabric steps run: the node's probe Python, the step's limit, the load."""

    python_for: Mapping[str, str]
    step_timeout_s: float
    gpus_per_node: int
    allow_cpu: bool = False
    bytes: int | None = None
    iters: int | None = None
    gemm: int = 4  # GEMMs per all-reduce during the soak
    startup_grace_s: float = 60.0  # Python and torch starting on the node, before the step


@dataclass(slots=True)
class _NodeRun:
    node: str
    pid: int | None = None
    figures: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class FabricLauncher:
    """Runs fabric steps on the listed nodes, and only on them."""

    def __init__(
        self,
        targets: Sequence[NodeTarget],
        connect: Connector,
        options: FabricOptions,
        bundle: ProbeBundle | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._targets = {t.name: t for t in targets}
        self._connect = connect
        self._options = options
        self._bundle = bundle or build_probe_bundle()
        self._digest = sha256_hex(self._bundle.content)
        self._clock = clock
        self._conns: dict[str, asyncssh.SSHClientConnection] = {}
        self._paths: dict[str, str] = {}
        self._running: dict[str, _NodeRun] = {}

    async def close(self) -> None:
        """End whatever still runs, then close every connection."""
        await self.end_all()
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    async def end_all(self) -> None:
        """End the fabric program's process group on every node where one runs."""
        await asyncio.gather(*(self._end(run) for run in list(self._running.values())))

    async def run_step(self, nodes: tuple[str, ...], purpose: Purpose) -> FabricStep:
        """All-reduce across ``nodes``; hung when it passes the step timeout."""
        unknown = [n for n in nodes if n not in self._targets]
        if unknown:
            raise KeyError(f"not in the configured fleet: {', '.join(unknown)}")
        started, begun = self._clock(), time.monotonic()
        runs = [_NodeRun(n) for n in nodes]
        port = _free_port()
        limit = self._options.step_timeout_s + self._options.startup_grace_s + KILL_GRACE_S
        tasks = [
            asyncio.create_task(self._run_node(run, rank, nodes, port, purpose))
            for rank, run in enumerate(runs)
        ]
        hung = False
        try:
            async with asyncio.timeout(limit):
                await asyncio.gather(*tasks)
        except TimeoutError:
            hung = True
        except (OSError, asyncssh.Error):
            pass  # recorded on the node's run; the step is judged failed below
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(self._end(r) for r in runs))
        return _step(purpose, nodes, runs, hung, started, time.monotonic() - begun)

    async def _run_node(
        self, run: _NodeRun, rank: int, nodes: tuple[str, ...], port: int, purpose: Purpose
    ) -> None:
        self._running[run.node] = run
        try:
            conn = await self._connection(run.node)
            command = self._command(run.node, rank, nodes, port, purpose)
            async with conn.create_process(command, encoding="utf-8", errors="replace") as proc:
                async for line in proc.stdout:
                    _accept(run, line.strip())
        except (OSError, asyncssh.Error) as exc:
            run.errors.append(f"{type(exc).__name__}: {exc}")
            raise  # the step cannot complete without this node: end the others now
        finally:
            self._running.pop(run.node, None)

    def _command(
        self, node: str, rank: int, nodes: tuple[str, ...], port: int, purpose: Purpose
    ) -> str:
        o = self._options
        spec = {
            "fabric": True,
            "master": self._targets[nodes[0]].host,
            "port": port,
            "node_rank": rank,
            "nodes": len(nodes),
            "gpus_per_node": o.gpus_per_node,
            "timeout": o.step_timeout_s,
            "allow_cpu": o.allow_cpu,
            "gemm": o.gemm if purpose == "soak" else 0,  # the soak's compute load
        }
        spec.update({k: v for k, v in (("bytes", o.bytes), ("iters", o.iters)) if v})
        python = o.python_for.get(node, "python3")
        argv = verified_argv(
            python, self._paths[node], self._digest, ["--nccl-worker", json.dumps(spec)]
        )
        return "sh -c " + shlex.quote("echo $$; exec " + " ".join(shell_word(w) for w in argv))

    async def _connection(self, node: str) -> asyncssh.SSHClientConnection:
        conn = self._conns.get(node)
        # A connection the node dropped (a reboot, an agent restart) is opened again.
        if conn is None or conn.is_closed():
            target = self._targets[node]
            conn = await self._connect(target)
            self._conns[node] = conn
            self._paths[node] = await ensure_uploaded(
                conn,
                self._bundle.name,
                self._bundle.content,
                target.remote_cache_dir,
                replace=True,
                python=self._options.python_for.get(node, "python3"),
            )
        return conn

    async def _end(self, run: _NodeRun) -> None:
        conn = self._conns.get(run.node)
        if conn is None or run.pid is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
            await asyncio.wait_for(conn.run(kill_command(run.pid), check=False), 10.0)


def _accept(run: _NodeRun, text: str) -> None:
    if not text or len(text) > MAX_LINE:
        return
    if run.pid is None and text.isdigit():
        run.pid = int(text)
        return
    try:
        message = json.loads(text)
    except ValueError:
        log.debug("%s: not a fabric line: %.80s", run.node, text)
        return
    if not isinstance(message, dict):
        return
    if message.get("type") == "result" and isinstance(message.get("value"), (int, float)):
        run.figures.append(float(message["value"]))
    elif message.get("type") == "error":
        run.errors.append(str(message.get("message", "error"))[:300])


def _step(
    purpose: Purpose,
    nodes: tuple[str, ...],
    runs: list[_NodeRun],
    hung: bool,
    started: float,
    seconds: float,
) -> FabricStep:
    figures = [f for r in runs for f in r.figures]
    errors = [f"{r.node}: {e}" for r in runs for e in r.errors]
    timed_out = hung or any("time limit" in e for e in errors)
    if timed_out:
        return FabricStep(
            purpose, nodes, "hung", None, None, started, seconds, "; ".join(errors[:3])
        )
    if errors or not figures:
        detail = "; ".join(errors[:3]) or "no figure reported"
        return FabricStep(purpose, nodes, "failed", None, None, started, seconds, detail)
    return FabricStep(purpose, nodes, "ok", min(figures), None, started, seconds)


def _free_port() -> int:
    # A port free on the controller; on a loopback fleet that is the rendezvous host.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
