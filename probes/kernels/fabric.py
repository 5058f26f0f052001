"""``fabric``: inter-node all-reduce bus bandwidth, one rank per GPU on every node.

The controller starts this once per node of a ladder step (``probes.pyz --nccl-worker
SPEC`` with ``"fabric": true`` in the spec) over the SSH session it already holds. The
node process leads its own process group, forks (CPU) or starts (GPU) one rank per
GPU, and the ranks of every node join one ``torch.distributed`` group whose rendezvous
is on the first node (NCCL on GPUs, gloo on the CPU). Each rank reports its bus
bandwidth, ``bytes / time * 2 (n - 1) / n`` over all n ranks.

A simulated node (``GPUFLEET_SIM_PROBE_FAULTS``) runs its ranks on the CPU, where
every rank of every node shares the same few cores: the measured figure would fall
with the node count whatever the fabric. So a simulated fabric reports a model, while
the all-reduce itself still really runs (it is what hangs, and what a dead peer ends):
each rank's figure is the simulated line rate ``SIM_LINE_GBPS`` divided by the largest
``fabric_slow`` factor in its group, which the ranks learn from a real all-reduce
(MAX) of their own factors, as a slow link slows every member of a ring.
``fabric_hang``: the ranks join the group and never all-reduce, so the step hangs
until its timeout, as a dead link does.

The node process ends its whole group at the step timeout, on SIGTERM (the SSH
channel closed: Ctrl-C on the controller) and when a rank fails, so no rank outlives
the step.
"""

import contextlib
import datetime
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from typing import Any, Dict, List, Optional

from .devices import simulated_faults
from .emit import Emitter

PROBE = "fabric"
GPU_BYTES, GPU_ITERS = 256 << 20, 20
CPU_BYTES, CPU_ITERS = 1 << 18, 5
EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 124
# A simulated GPU's share of the fabric: one 400 Gb/s port per GPU is 50 GB/s.
SIM_LINE_GBPS = 50.0


def node_main(spec: Dict[str, Any], emitter: Emitter) -> int:
    """One node of a ladder step: start its ranks, wait, end the group on any failure."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, lambda *_: _end_group())
    import torch

    # The step's time counts from here: loading torch is the node's Python, not the fabric
    # (it took 30 s on a loaded 2-core machine); the controller allows for it separately.
    _start_watchdog(float(spec["timeout"]), emitter)

    faults = simulated_faults()
    local = _local_gpus(torch, faults, bool(spec.get("allow_cpu")))
    if local != int(spec["gpus_per_node"]):
        emitter.error(
            "fabric_gpus",
            "%d GPUs on this node, the step expects %d" % (local, spec["gpus_per_node"]),
            probe=PROBE,
        )
        return EXIT_FAILED
    on_gpu = faults is None and torch.cuda.is_available()
    simulated = {"simulated": True, **faults} if faults is not None else {}
    ranks = [_start_rank(_rank_spec(spec, i, on_gpu, simulated), emitter) for i in range(local)]
    failed = _wait_ranks(ranks)
    if failed:
        emitter.error("fabric_failed", "all-reduce rank failed: %s" % failed, probe=PROBE)
        _end_group()
    return EXIT_FAILED if failed else EXIT_OK


def _local_gpus(torch: Any, faults: Optional[Dict[str, Any]], allow_cpu: bool) -> int:
    if faults is not None:
        return int(faults.get("gpus", 8))
    if torch.cuda.is_available():
        return int(torch.cuda.device_count())
    return 1 if allow_cpu else 0


def _rank_spec(
    spec: Dict[str, Any], local: int, on_gpu: bool, faults: Dict[str, Any]
) -> Dict[str, Any]:
    per_node = int(spec["gpus_per_node"])
    return {
        "fabric_rank": True,
        "rank": int(spec["node_rank"]) * per_node + local,
        "world": int(spec["nodes"]) * per_node,
        "gpu": local,
        "master": spec["master"],
        "port": int(spec["port"]),
        "device": "cuda:%d" % local if on_gpu else "cpu",
        "backend": "nccl" if on_gpu else "gloo",
        "bytes": int(spec.get("bytes", GPU_BYTES if on_gpu else CPU_BYTES)),
        "iters": int(spec.get("iters", GPU_ITERS if on_gpu else CPU_ITERS)),
        "timeout": float(spec["timeout"]),
        "simulated": bool(faults),
        "slow": max(1.0, float(faults.get("fabric_slow", 1.0))),
        "hang": bool(faults.get("fabric_hang", False)),
        "gemm": int(spec.get("gemm", 0)),
    }


def _start_rank(rank: Dict[str, Any], emitter: Emitter) -> Any:
    if rank["backend"] == "nccl":
        # A fresh process per GPU: CUDA cannot be used in a child forked after init.
        entry = [sys.executable, sys.argv[0]]
        if not zipfile.is_zipfile(sys.argv[0]):
            entry = [sys.executable, "-m", __package__ or "probes.kernels"]
        return subprocess.Popen(
            [*entry, "--nccl-worker", json.dumps(rank)], stdin=subprocess.DEVNULL
        )
    process = multiprocessing.get_context("fork").Process(
        target=_forked_rank, args=(rank, emitter), daemon=True
    )
    process.start()
    return process


def _forked_rank(rank: Dict[str, Any], emitter: Emitter) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.exit(rank_main(rank, emitter))


def _wait_ranks(ranks: List[Any]) -> List[int]:
    """Indices of ranks that failed; stops waiting at the first failure."""
    pending = dict(enumerate(ranks))
    failed: List[int] = []
    while pending and not failed:
        for index, process in list(pending.items()):
            status = _exit_status(process)
            if status is None:
                continue
            del pending[index]
            if status != 0:
                failed.append(index)
        time.sleep(0.05)  # polling a handful of local children; not a synchronisation
    return failed


def _exit_status(process: Any) -> Optional[int]:
    if isinstance(process, subprocess.Popen):
        return process.poll()
    code = process.exitcode
    return None if code is None else int(code)


def _start_watchdog(seconds: float, emitter: Emitter) -> None:
    def expire() -> None:
        emitter.error("timeout", "fabric step: time limit of %gs reached" % seconds, probe=PROBE)
        _end_group()

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _end_group() -> None:
    # Every rank is in this process's group: one signal ends them all, this one too.
    os.killpg(os.getpgid(0), signal.SIGKILL)


def rank_main(rank: Dict[str, Any], emitter: Emitter) -> int:
    """One rank: join the fleet-wide group, all-reduce, report the bus bandwidth."""
    import torch
    import torch.distributed as dist

    if rank["backend"] == "gloo":
        torch.set_num_threads(1)
    else:
        torch.cuda.set_device(torch.device(rank["device"]))
    dist.init_process_group(
        rank["backend"],
        init_method="tcp://%s:%d" % (rank["master"], rank["port"]),
        rank=rank["rank"],
        world_size=rank["world"],
        timeout=datetime.timedelta(seconds=rank["timeout"]),
    )
    if rank["hang"]:
        time.sleep(rank["timeout"] + 60.0)  # never all-reduces; the watchdog ends it
        return EXIT_TIMEOUT
    try:
        seconds = _all_reduce_seconds(torch, dist, rank)
        slowest = _group_max(torch, dist, rank["slow"]) if rank["simulated"] else 1.0
    finally:
        dist.destroy_process_group()
    world = rank["world"]
    busbw = rank["bytes"] / seconds * 2.0 * (world - 1) / world / 1e9
    if rank["simulated"]:
        busbw = SIM_LINE_GBPS / slowest
    emitter.result(
        PROBE,
        "fabric_busbw",
        rank["gpu"],
        busbw,
        "GB/s",
        rank=rank["rank"],
        ranks=world,
        backend=rank["backend"],
        simulated=rank["simulated"],
    )
    return EXIT_OK


def _all_reduce_seconds(torch: Any, dist: Any, rank: Dict[str, Any]) -> float:
    device = torch.device(rank["device"])
    buffer = torch.ones(rank["bytes"] // 4, dtype=torch.float32, device=device)
    # The soak's compute load between all-reduces: GEMMs of a fixed size on this rank.
    matrix = torch.ones(256, 256, dtype=torch.float32, device=device) if rank["gemm"] else None
    for _ in range(2):  # warm-up: connection establishment
        dist.all_reduce(buffer)
    _sync(torch, device)
    dist.barrier()
    reduced = 0.0
    for _ in range(rank["iters"]):
        for _ in range(rank["gemm"]):
            torch.mm(matrix, matrix)
        began = time.perf_counter()
        dist.all_reduce(buffer)
        _sync(torch, device)
        reduced += time.perf_counter() - began
    dist.barrier()
    return reduced / rank["iters"]


def _group_max(torch: Any, dist: Any, value: float) -> float:
    """The largest ``value`` across the group, by a real all-reduce."""
    tensor = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor.item())


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
