"""The probe program: ``python3 probes.pyz --suite quick --timeout 120 [--gpus all|0,3]``.

Lines on stdout: ``hello`` (pid, process group, torch, devices), ``progress``,
``result``, ``skip``, ``error``, then exactly one ``done`` with the run's status.
Exit status: 0 done, 2 bad arguments, 3 no torch, 4 no GPU, 124 time limit,
143 SIGTERM. The process makes itself a process-group leader first, so that the
controller can end it and every NCCL rank it started with one ``kill -- -PGID``.
"""

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
import zipfile
from typing import Any, List, Optional, Union

from . import PROTOCOL_VERSION
from .context import Deadline, ProbeContext
from .devices import NoDeviceError, discover, parse_gpu_selection, simulated_faults
from .emit import Emitter
from .suite import SUITES, run_suite

EXIT_OK, EXIT_USAGE, EXIT_NO_TORCH, EXIT_NO_GPU, EXIT_TIMEOUT, EXIT_TERM = 0, 2, 3, 4, 124, 143


class Terminated(BaseException):
    """SIGTERM arrived: unwind, end the workers, say so, exit."""


class Finish:
    """Sends the single ``done`` line, whichever of main and the watchdog gets there first."""

    def __init__(self, emitter: Emitter) -> None:
        self._emitter = emitter
        self._lock = threading.Lock()
        self._done = False
        self.started = time.monotonic()

    def __call__(self, status: str) -> bool:
        with self._lock:
            if self._done:
                return False
            self._done = True
        self._emitter.send("done", status=status, elapsed_s=time.monotonic() - self.started)
        return True


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="probes.pyz", description="gpufleet node probes")
    parser.add_argument("--suite", choices=sorted(SUITES), default="quick")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for the suite")
    parser.add_argument("--gpus", default="all", help="'all' or indices such as 0,3")
    parser.add_argument("--allow-cpu", action="store_true", help="run on the CPU without a GPU")
    parser.add_argument("--nccl-worker", metavar="SPEC", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Run a suite and stream its lines; returns the exit status."""
    args = parse_args(argv)
    emitter = Emitter()
    if args.nccl_worker:
        from . import nccl

        return nccl.worker(json.loads(args.nccl_worker), emitter)
    _lead_process_group()
    finish = Finish(emitter)
    signal.signal(signal.SIGTERM, _raise_terminated)
    ctx: Optional[ProbeContext] = None
    try:
        prepared = _prepare(args, emitter)
        if isinstance(prepared, int):
            finish("error")
            return prepared
        ctx = prepared
        _start_watchdog(args.timeout, ctx, finish)
        incomplete = run_suite(ctx, args.suite)
        finish("incomplete" if incomplete else "ok")
        return EXIT_OK
    except Terminated:
        if ctx is not None:
            ctx.children.kill_all()
        emitter.error("terminated", "probe stopped by SIGTERM")
        finish("terminated")
        return EXIT_TERM


def _prepare(args: argparse.Namespace, emitter: Emitter) -> Union[ProbeContext, int]:
    """Import torch, find devices, say hello; after an error line, the exit status."""
    try:
        import torch
    except ImportError as exc:
        emitter.error("no_torch", "%s cannot import torch: %s" % (sys.executable, exc))
        return EXIT_NO_TORCH
    try:
        faults = simulated_faults()
        devices = discover(torch, parse_gpu_selection(args.gpus), args.allow_cpu, faults)
    except NoDeviceError as exc:
        emitter.error("no_gpu", str(exc))
        return EXIT_NO_GPU
    except ValueError as exc:
        emitter.error("bad_request", str(exc))
        return EXIT_USAGE
    if faults is not None or not devices[0].is_cuda:
        torch.set_num_threads(1)  # CPU runs: one core per measurement keeps figures comparable
    deadline = Deadline(args.timeout - min(5.0, 0.1 * args.timeout))
    ctx = ProbeContext(torch, devices, emitter, deadline, entry=_entry_command())
    emitter.send(
        "hello",
        v=PROTOCOL_VERSION,
        pid=os.getpid(),
        pgid=os.getpgid(0),
        python=sys.version.split()[0],
        torch=torch.__version__,
        cuda=torch.version.cuda,
        simulated=faults is not None,
        suite=args.suite,
        gpus=[d.describe() for d in devices],
    )
    return ctx


def _lead_process_group() -> None:
    # EPERM means a session leader, hence already the leader of its own group.
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _start_watchdog(seconds: float, ctx: ProbeContext, finish: Finish) -> None:
    """Hard stop at the time limit, even if a kernel is stuck inside torch."""

    def expire() -> None:
        ctx.children.kill_all()
        ctx.emit.error("timeout", "time limit of %gs reached" % seconds)
        if finish("timeout"):
            os._exit(EXIT_TIMEOUT)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _entry_command() -> List[str]:
    """How to start this program again, for the NCCL ranks."""
    if zipfile.is_zipfile(sys.argv[0]):
        return [sys.executable, sys.argv[0]]
    return [sys.executable, "-m", __package__ or "probes.kernels"]
