"""Where the first full view's time goes: each node's start-up steps, timed in the controller.

Installed by bench/lib/fleet_probe.py when ``GPUFLEET_BENCH_TIMELINE=1`` (bench_fleet's
``--timeline``); off otherwise, so the measured runs carry none of it. It wraps, without
changing what they do:

- ``NodeSession.run`` (the node's task starts: ``task``),
- ``connect_node`` as the node session calls it, inside the handshake bound
  (``handshake`` when it begins, ``connected`` when authenticated),
- ``AgentChannel.connection_made`` (the agent's channel is open: ``channel``),
- ``NodeSession._on_line`` (the agent's first line, its hello: ``hello``; its first
  sample: ``sample``),
- the first snapshot in which every node is streaming (``full view``).

Times are seconds since the process was created (from ``/proc/self/stat``), so the
interpreter's start and the imports count. For each step it keeps every node's time and
the process CPU when the last node reached it. With ``GPUFLEET_BENCH_SIM_PID`` set, it
also reads the simulated nodes' CPU from the probe's start to the full view: the nodes'
side of every handshake, on the same cores.
"""

from __future__ import annotations

import os
import time
from typing import Any

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STEPS = ("task", "handshake", "connected", "channel", "hello", "sample")


def cpu_of(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (None: gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime


def process_started_at() -> float:
    """Wall time at which this process was created (10 ms resolution)."""
    with open("/proc/stat", encoding="ascii") as stat:
        boot = next(float(line.split()[1]) for line in stat if line.startswith("btime"))
    with open("/proc/self/stat", encoding="ascii") as own:
        fields = own.read().rsplit(")", 1)[1].split()
    return boot + int(fields[19]) / _CLOCK_TICKS  # field 22 of stat(5): starttime


class Timeline:
    """Per node and step, when it happened; per step, the CPU spent when the last node got there."""

    def __init__(self) -> None:
        self.t0 = process_started_at()
        self.at: dict[str, dict[str, float]] = {step: {} for step in STEPS}
        self.last: dict[str, tuple[float, float]] = {}  # step -> (time, process CPU)
        self.nodes = 0
        self.full_view: tuple[float, float] | None = None
        self.marks: dict[str, tuple[float, float]] = {"probe imported": self._now()}
        self.sim_pid = int(os.environ.get("GPUFLEET_BENCH_SIM_PID", "0"))
        self.sim_cpu_at_start = cpu_of(self.sim_pid) if self.sim_pid else None
        self.sim_cpu_to_full_view: float | None = None

    def _now(self) -> tuple[float, float]:
        return round(time.time() - self.t0, 3), round(time.process_time(), 3)

    def note(self, step: str, node: str) -> None:
        seen = self.at[step]
        if node in seen:
            return
        now, cpu = self._now()
        seen[node] = now
        if step == "task":
            self.nodes += 1
            if self.nodes == 1:  # the runtime has started: the CLI's own start-up is done
                self.marks["first node task"] = (now, cpu)
        elif len(seen) == self.nodes:
            self.last[step] = (now, cpu)

    def install(self) -> None:
        """Wrap the node session's steps (the probe calls it before the CLI runs)."""
        import collectors.ssh.node as node_module
        from collectors.ssh.node import NodeSession
        from collectors.ssh.stream import AgentChannel

        timeline = self
        run, on_line, made = NodeSession.run, NodeSession._on_line, AgentChannel.connection_made
        connect = node_module.connect_node

        async def run_noted(session: NodeSession) -> None:
            timeline.note("task", session.target.name)
            await run(session)

        async def connect_noted(target: Any, options: Any) -> Any:
            timeline.note("handshake", target.name)
            conn = await connect(target, options)
            timeline.note("connected", target.name)
            return conn

        def made_noted(channel: AgentChannel, chan: Any) -> None:
            timeline.note("channel", channel._on_line.__self__.target.name)  # type: ignore[attr-defined]
            made(channel, chan)

        def line_noted(session: NodeSession, line: bytes) -> None:
            name = session.target.name
            timeline.note("hello", name)
            # The type tag leads every line the simulated nodes (msgspec) write.
            if name not in timeline.at["sample"] and b'"sample"' in line[:24]:
                timeline.note("sample", name)
            on_line(session, line)

        NodeSession.run = run_noted  # type: ignore[method-assign,assignment]
        NodeSession._on_line = line_noted  # type: ignore[method-assign,assignment]
        AgentChannel.connection_made = made_noted  # type: ignore[method-assign,assignment]
        node_module.connect_node = connect_noted

    def on_snapshot(self, streaming: int) -> None:
        """A snapshot was taken with ``streaming`` nodes streaming."""
        if self.full_view is None and self.nodes and streaming >= self.nodes:
            self.full_view = self._now()
            if self.sim_cpu_at_start is not None:
                now = cpu_of(self.sim_pid)
                if now is not None:
                    self.sim_cpu_to_full_view = round(now - self.sim_cpu_at_start, 2)

    def report(self) -> dict[str, Any]:
        """Per step: first / median / last node (s since process start), CPU at the last."""
        steps: dict[str, Any] = {}
        for step in STEPS:
            times = sorted(self.at[step].values())
            if not times:
                continue
            steps[step] = {
                "first": times[0],
                "p50": times[len(times) // 2],
                "last": times[-1],
                "cpu_at_last": self.last.get(step, (None, None))[1],
                "nodes": len(times),
            }
        return {
            "steps": steps,
            "marks": self.marks,
            "full_view": self.full_view,
            "simulator_cpu_s_to_full_view": self.sim_cpu_to_full_view,
        }
