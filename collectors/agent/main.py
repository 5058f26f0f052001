"""Wiring of the node agent: options, NVML (real or simulated), hello, loop, bye."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import sys
import threading
from typing import Any, Callable, List, Optional, Tuple

import pynvml

from collectors.agent import AGENT_VERSION, wire
from collectors.agent.cli import Options, parse_args
from collectors.agent.events import EventWatcher
from collectors.agent.fields import GPU_FIELDS, GPU_SLOW_FIELDS, NIC_FIELDS, PORT_FIELDS
from collectors.agent.gpus import Gpu, open_gpus, system_versions
from collectors.agent.host import node_identity
from collectors.agent.jobs import JobReporter
from collectors.agent.loop import Agent, Clock, RealClock
from collectors.agent.nvmlcall import error_name
from collectors.agent.processes import list_processes
from collectors.agent.renter import RenterIdentity
from collectors.agent.sampler import NodeSampler
from collectors.agent.sysfs import (
    AttributeReader,
    discover_nics,
    discover_ports,
    is_sysfs_mount,
)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``python3 -m collectors.agent`` and the zipapp; returns the exit code."""
    options = parse_args(argv)
    clock = RealClock()
    _handle_signals(clock)
    writer = wire.Writer(sys.stdout.buffer)
    scratch = sim = None
    try:
        if options.sim:
            from collectors.agent.simnode import SimStartError, scratch_sysfs, start_sim

            scratch = scratch_sysfs(options)
            try:
                sim = start_sim(options)
            except SimStartError as exc:
                return _refuse(writer, clock, "SimStartError", str(exc))
        if options.command == "processes":
            return print_processes(options, writer, clock)
        return run(options, writer, clock)
    finally:
        if sim is not None:
            sim.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if writer.closed:
            # Python flushes stdout again at exit; with the reader gone that would print
            # a BrokenPipeError and exit 120. Point fd 1 at /dev/null first.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


def print_processes(options: Options, writer: wire.Writer, clock: Clock) -> int:
    """Write one ``processes`` message (the GPU compute processes now) and return 0."""
    initialised = False
    try:
        pynvml.nvmlInit()
        initialised = True
        body = list_processes(options.proc_root or "/proc")
    except pynvml.NVMLError as exc:
        body = {"processes": [], "errors": [{"gpu": None, "error": error_name(exc)}]}
    finally:
        if initialised:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()
    with contextlib.suppress(wire.StreamClosed):
        writer.send(wire.processes(clock.time(), body))
    return 0


def _refuse(writer: wire.Writer, clock: Clock, code: str, message: str) -> int:
    """Say why the agent cannot start, on stderr and as a fatal protocol error."""
    sys.stderr.write("gpufleet-agent: %s\n" % message)
    with contextlib.suppress(wire.StreamClosed):
        writer.send(wire.error(clock.time(), code, message, fatal=True))
    return 2


def _handle_signals(clock: Clock) -> None:
    def stop(signum: int, frame: Any) -> None:
        clock.stop(signal.Signals(signum).name)

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)


def run(options: Options, writer: wire.Writer, clock: Clock, inline_events: bool = False) -> int:
    """Send hello, sample until stopped, send bye; returns the exit code.

    With ``inline_events`` NVML events are drained after each sample instead of by a
    thread (tests that drive the clock themselves).
    """
    try:
        return _run(options, writer, clock, inline_events)
    except wire.StreamClosed:
        clock.stop("stdout closed")
        return 0
    except Exception as exc:
        # A bug: say so on the stream (the controller shows it and restarts the
        # agent), then let the traceback reach stderr and the exit status.
        with contextlib.suppress(wire.StreamClosed):
            writer.send(wire.error(clock.time(), type(exc).__name__, repr(exc), fatal=True))
        raise


def _job_reporter(options: Options) -> Optional[JobReporter]:
    """Scheduler job attribution unless ``--no-jobs``."""
    if not options.jobs:
        return None
    return JobReporter(
        options.proc_root or "/proc", refresh_s=options.jobs_refresh, scan_s=options.jobs_scan
    )


def _run(options: Options, writer: wire.Writer, clock: Clock, inline_events: bool) -> int:
    nvml, gpus, nvml_error = _open_nvml()
    root = options.sysfs_root or "/sys"
    reader = AttributeReader(keep_open=is_sysfs_mount(root))
    renter = RenterIdentity(options.renter_users, options.renter_processes)
    sampler = NodeSampler(
        gpus,
        discover_ports(root, reader),
        discover_nics(root, reader),
        renter,
        options.proc_root or "/proc",
    )
    writer.send(_hello(options, sampler, clock, nvml))
    if nvml_error is not None:
        writer.send(wire.error(clock.time(), error_name(nvml_error), _nvml_hint(nvml_error)))
    events = EventWatcher(gpus, _emitter(writer, clock), clock.time) if gpus else None
    thread = events.start(clock.stop_event) if events and not inline_events else None
    agent = Agent(
        writer,
        sampler,
        clock,
        options.interval,
        options.slow_interval,
        events=events if inline_events else None,
        max_samples=options.max_samples,
        jobs=_job_reporter(options),
    )
    try:
        reason = agent.run()
    finally:
        clock.stop("exiting")
        _close(events, thread, gpus, nvml)
        reader.close()
    writer.send(wire.bye(clock.time(), reason))
    return 0


def _open_nvml() -> Tuple[bool, List[Gpu], Optional[BaseException]]:
    """``(initialised, GPUs, error)``: NVML initialised once and every GPU opened."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return False, [], exc
    try:
        return True, open_gpus(), None
    except pynvml.NVMLError as exc:  # e.g. the device count itself fails
        return True, [], exc


def _emitter(writer: wire.Writer, clock: Clock) -> Callable[[wire.Message], None]:
    """How the event thread writes: a closed stdout stops the agent instead of raising."""

    def emit(message: wire.Message) -> None:
        try:
            writer.send(message)
        except wire.StreamClosed:
            clock.stop("stdout closed")

    return emit


def _nvml_hint(exc: BaseException) -> str:
    return "NVML unavailable (%s): no GPU data from this node; ports still stream" % exc


def _hello(options: Options, sampler: NodeSampler, clock: Clock, nvml: bool) -> wire.Message:
    versions = system_versions() if nvml else {"driver": None, "cuda": None, "nvml": None}
    return wire.hello(
        clock.time(),
        agent=AGENT_VERSION,
        host=options.host,
        interval=options.interval,
        slow_interval=options.slow_interval,
        gpu_fields=list(GPU_FIELDS),
        gpu_slow_fields=list(GPU_SLOW_FIELDS),
        port_fields=list(PORT_FIELDS),
        nic_fields=list(NIC_FIELDS),
        gpus=[gpu.info for gpu in sampler.gpus],
        ports=[port.info() for port in sampler.ports],
        nics=[nic.info() for nic in sampler.nics],
        python=platform.python_version(),
        unsupported=sampler.unsupported(),
        **node_identity(options.proc_root or "/proc", options.etc_root or "/etc"),
        **versions,
    )


def _close(
    events: Optional[EventWatcher],
    thread: Optional[threading.Thread],
    gpus: List[Gpu],
    nvml: bool,
) -> None:
    if thread is not None:
        # The watcher wakes at least every wait slice (0.5 s) to see the stop flag.
        thread.join(timeout=2.0)
    if events is not None and (thread is None or not thread.is_alive()):
        events.close()
    for gpu in gpus:
        gpu.gpm.close()
    if nvml:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
