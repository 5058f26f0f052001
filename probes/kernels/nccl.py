"""``nccl``: intra-node all-reduce bus bandwidth, one process per GPU, in GB/s.

The parent starts one worker process per selected GPU (this same program with
``--nccl-worker``); the workers join a ``torch.distributed`` group (NCCL on GPUs,
gloo on the CPU), all-reduce a buffer after warm-up, and each reports its bus
bandwidth: ``bytes / time * 2 (n - 1) / n``, the nccl-tests convention that makes
the figure comparable with the per-GPU link bandwidth. An all-reduce is collective:
one slow GPU slows the whole ring, so a simulated slow factor is not applied here.
"""

import datetime
import json
import multiprocessing
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

from . import fabric
from .context import ProbeContext, ProbeTimeout
from .emit import Emitter

PROBE = "nccl"
GPU_BYTES, GPU_ITERS = 256 << 20, 20
CPU_BYTES, CPU_ITERS = 1 << 20, 5


def planned_steps(ctx: ProbeContext) -> int:
    """One step per rank that finishes (none when there is nothing to all-reduce with)."""
    return len(ctx.devices) if len(ctx.devices) > 1 else 0


def run(ctx: ProbeContext) -> None:
    """Start the ranks, wait for them within the deadline, report failures."""
    if len(ctx.devices) < 2:
        ctx.emit.send("skip", probe=PROBE, reason="all-reduce needs two or more GPUs")
        return
    port = _free_port()
    for rank, device in enumerate(ctx.devices):
        spec = _worker_spec(ctx, rank, device.index, str(device.torch_device), port)
        # stdout is inherited: each rank writes its own result lines to the same pipe.
        if ctx.on_gpu:
            # A fresh process per GPU: CUDA cannot be used in a child forked after init.
            command = [*ctx.entry, "--nccl-worker", json.dumps(spec)]
            ctx.children.add(subprocess.Popen(command, stdin=subprocess.DEVNULL))
        else:
            ctx.children.add(ForkedRank(spec, ctx.emit))
    try:
        _wait(ctx)
    finally:
        ctx.children.kill_all()


class ForkedRank:
    """A CPU rank forked from the probe: torch is already imported, so no second start-up.

    Offers the part of ``subprocess.Popen`` that ``Children`` uses.
    """

    def __init__(self, spec: Dict[str, Any], emitter: Emitter) -> None:
        self._process = multiprocessing.get_context("fork").Process(
            target=_forked_rank, args=(spec, emitter), daemon=True
        )
        self._process.start()

    def poll(self) -> Optional[int]:
        """The exit status, None while running."""
        return self._process.exitcode

    def kill(self) -> None:
        """SIGKILL the rank."""
        self._process.kill()

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for the exit status.

        Raises:
            subprocess.TimeoutExpired: still running after ``timeout`` seconds.
        """
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired("nccl rank", timeout or 0.0)
        return self._process.exitcode


def _forked_rank(spec: Dict[str, Any], emitter: Emitter) -> None:
    # The parent turns SIGTERM into an exception; a rank just dies of it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.exit(worker(spec, emitter))


def _worker_spec(
    ctx: ProbeContext, rank: int, index: int, device: str, port: int
) -> Dict[str, Any]:
    return {
        "rank": rank,
        "world": len(ctx.devices),
        "port": port,
        "gpu": index,
        "device": device,
        "backend": "nccl" if ctx.on_gpu else "gloo",
        "bytes": GPU_BYTES if ctx.on_gpu else CPU_BYTES,
        "iters": GPU_ITERS if ctx.on_gpu else CPU_ITERS,
        "timeout": max(1.0, ctx.deadline.remaining()),
    }


def _wait(ctx: ProbeContext) -> None:
    failed: List[int] = []
    for rank, process in enumerate(ctx.children.processes):
        try:
            status = process.wait(timeout=max(0.0, ctx.deadline.remaining()))
        except subprocess.TimeoutExpired:
            raise ProbeTimeout(PROBE + ": time limit reached during the all-reduce") from None
        if status != 0:
            failed.append(rank)
        ctx.advance(PROBE, ctx.devices[rank].index, "rank %d finished" % rank)
    if failed:
        gpus = [ctx.devices[rank].index for rank in failed]
        ctx.emit.error(
            "nccl_failed",
            "all-reduce worker failed on GPU " + ",".join(map(str, gpus)),
            probe=PROBE,
            gpus=gpus,
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker(spec: Dict[str, Any], emitter: Emitter) -> int:
    """One rank: join the group, all-reduce, report this GPU's bus bandwidth.

    The inter-node fabric step enters the program the same way (``--nccl-worker``): a
    spec with ``fabric`` starts one node of a ladder step, ``fabric_rank`` one of its
    ranks (see ``fabric.py``).
    """
    if spec.get("fabric"):
        return fabric.node_main(spec, emitter)
    if spec.get("fabric_rank"):
        return fabric.rank_main(spec, emitter)
    import torch
    import torch.distributed as dist

    if spec["backend"] == "gloo":
        torch.set_num_threads(1)  # simulated ranks share the CPU; keep them one core each
    else:
        torch.cuda.set_device(torch.device(spec["device"]))
    dist.init_process_group(
        spec["backend"],
        init_method="tcp://127.0.0.1:%d" % spec["port"],
        rank=spec["rank"],
        world_size=spec["world"],
        timeout=datetime.timedelta(seconds=spec["timeout"]),
    )
    try:
        seconds = _all_reduce_seconds(torch, dist, spec)
    finally:
        dist.destroy_process_group()
    world = spec["world"]
    busbw = spec["bytes"] / seconds * 2.0 * (world - 1) / world / 1e9
    emitter.result(
        PROBE,
        "allreduce_busbw",
        spec["gpu"],
        busbw,
        "GB/s",
        bytes=spec["bytes"],
        ranks=world,
        backend=spec["backend"],
    )
    return 0


def _all_reduce_seconds(torch: Any, dist: Any, spec: Dict[str, Any]) -> float:
    """Mean seconds per all-reduce of ``spec["bytes"]`` after warm-up."""
    device = torch.device(spec["device"])
    buffer = torch.ones(spec["bytes"] // 4, dtype=torch.float32, device=device)
    for _ in range(2):  # warm-up: communicator setup, connection establishment
        dist.all_reduce(buffer)
    _sync(torch, device)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(spec["iters"]):
        dist.all_reduce(buffer)
    _sync(torch, device)
    elapsed = time.perf_counter() - start
    del buffer
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return elapsed / spec["iters"]


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
