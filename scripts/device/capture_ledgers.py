"""Real-GPU captures for the energy ledger and GPU-to-job attribution (run on a GPU node).

Started by ``scripts/device/capture_ledgers.sh``; writes two files under ``--out``:

``energy-under-load.json``
    NVML sampled every ``--interval`` seconds for ``--seconds`` seconds: the total-energy
    counter (mJ), power usage (mW), the enforced power limit, the power fields
    (instant, average), SM and memory clocks, GPU and memory temperatures and
    utilisation. From ``--load-start`` to ``--load-end`` seconds a child process runs
    back-to-back bf16 GEMMs. A summary sets the counter's delta beside the trapezoid
    integral of the sampled power, over the whole window and each phase.
``gpu-process-cgroup.json``
    While the GEMM child runs: NVML's compute processes, the child's /proc texts
    (cgroup, status, cmdline), /proc/self/cgroup, the cgroup filesystem type and what
    ``python3 -m collectors.agent processes`` prints.

Fails soft: a missing library, an NVML error or a dead child is written down as a value
(an error name), and both files are written whatever happens.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

try:
    import pynvml
except ImportError as exc:  # no nvidia-ml-py: every query below records this
    pynvml = None
    PYNVML_IMPORT_ERROR: str | None = f"{type(exc).__name__}: {exc}"
else:
    PYNVML_IMPORT_ERROR = None


def err(exc: BaseException, detail: bool = True) -> dict[str, str]:
    """An error as a value: pynvml's class name (NVMLError_NotSupported) and its text."""
    if not detail:
        return {"error": type(exc).__name__}
    return {"error": type(exc).__name__, "detail": str(exc)[:200]}


def nvml(fn_name: str, *args: Any, detail: bool = True) -> Any:
    """Call ``pynvml.<fn_name>(*args)``; an error comes back as ``{"error": ...}``."""
    if pynvml is None:
        return {"error": "NoPynvml"}
    try:
        return getattr(pynvml, fn_name)(*args)
    except Exception as exc:  # NVMLError_* and anything else: a value, never a crash
        return err(exc, detail)


FIELD_NAMES = {
    "NVML_FI_DEV_POWER_INSTANT": "fi_power_instant_mw",
    "NVML_FI_DEV_POWER_AVERAGE": "fi_power_average_mw",
    "NVML_FI_DEV_ENERGY": "fi_energy_mj",
    "NVML_FI_DEV_MEMORY_TEMP": "fi_memory_temp_c",
}


def field_values(handle: Any) -> dict[str, Any]:
    """The power/energy/memory-temperature fields, each a value with the driver's
    timestamp (us) or an error name."""
    if pynvml is None:
        return {}
    ids = [(getattr(pynvml, n), key) for n, key in FIELD_NAMES.items() if hasattr(pynvml, n)]
    got = nvml("nvmlDeviceGetFieldValues", handle, [i for i, _ in ids], detail=False)
    if isinstance(got, dict):
        return {key: got for _, key in ids}
    out: dict[str, Any] = {}
    for (_, key), fv in zip(ids, got, strict=False):
        if fv.nvmlReturn != 0:
            cls = pynvml.NVMLError._valClassMapping.get(fv.nvmlReturn)
            out[key] = {"error": cls.__name__ if cls else f"NVMLError_{fv.nvmlReturn}"}
            continue
        member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}
        value = getattr(fv.value, member.get(fv.valueType, "ullVal"))
        out[key] = {"value": value, "ts_us": int(fv.timestamp)}
    return out


def sample(handle: Any, t0: float) -> dict[str, Any]:
    t = time.monotonic()
    row: dict[str, Any] = {"t": round(t - t0, 4)}
    row["energy_mj"] = nvml("nvmlDeviceGetTotalEnergyConsumption", handle, detail=False)
    row["t_power"] = round(time.monotonic() - t0, 4)
    row["power_mw"] = nvml("nvmlDeviceGetPowerUsage", handle, detail=False)
    row["enforced_limit_mw"] = nvml("nvmlDeviceGetEnforcedPowerLimit", handle, detail=False)
    if pynvml is not None:
        sm, mem, gpu = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM, pynvml.NVML_TEMPERATURE_GPU
        row["sm_clock_mhz"] = nvml("nvmlDeviceGetClockInfo", handle, sm, detail=False)
        row["mem_clock_mhz"] = nvml("nvmlDeviceGetClockInfo", handle, mem, detail=False)
        row["gpu_temp_c"] = nvml("nvmlDeviceGetTemperature", handle, gpu, detail=False)
    util = nvml("nvmlDeviceGetUtilizationRates", handle, detail=False)
    row["util"] = util if isinstance(util, dict) else {"gpu": util.gpu, "memory": util.memory}
    row["reasons"] = nvml("nvmlDeviceGetCurrentClocksEventReasons", handle, detail=False)
    row.update(field_values(handle))
    row["read_s"] = round(time.monotonic() - t, 4)
    return row


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def integrate(samples: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """Counter delta and trapezoid integral of power between the samples inside [start, end]."""
    rows = [
        s
        for s in samples
        if start <= s["t"] <= end
        and number(s["energy_mj"]) is not None
        and number(s["power_mw"]) is not None
    ]
    if len(rows) < 2:
        return {"start": start, "end": end, "samples": len(rows), "error": "too few samples"}
    joules = 0.0
    for a, b in itertools.pairwise(rows):
        dt = b["t_power"] - a["t_power"]
        joules += (a["power_mw"] + b["power_mw"]) / 2 / 1000 * dt
    counter = (rows[-1]["energy_mj"] - rows[0]["energy_mj"]) / 1000
    span = rows[-1]["t"] - rows[0]["t"]
    return {
        "start": start,
        "end": end,
        "samples": len(rows),
        "first_t": rows[0]["t"],
        "last_t": rows[-1]["t"],
        "counter_delta_j": round(counter, 3),
        "integrated_power_j": round(joules, 3),
        "mean_power_w": round(joules / span, 3) if span > 0 else None,
        "relative_difference": round((joules - counter) / counter, 6) if counter else None,
    }


def proc_text(path: str) -> Any:
    try:
        with open(path, "rb") as stream:
            return stream.read(65536).decode("utf-8", "replace")
    except OSError as exc:
        return err(exc)


def run_text(argv: list[str], timeout: float = 30) -> dict[str, Any]:
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=timeout, cwd=REPO, check=False, text=True
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"argv": argv, **err(exc)}
    return {
        "argv": argv,
        "rc": done.returncode,
        "stdout": done.stdout[-200_000:],
        "stderr": done.stderr[-20_000:],
    }


def processes_snapshot(handle: Any, child_pid: int | None, t0: float) -> dict[str, Any]:
    """What attribution would read while the GEMM child holds the GPU."""
    snap: dict[str, Any] = {"t": round(time.monotonic() - t0, 3), "child_pid": child_pid}
    running = nvml("nvmlDeviceGetComputeRunningProcesses", handle)
    if isinstance(running, dict):
        snap["nvml_compute_processes"] = running
    else:
        snap["nvml_compute_processes"] = [
            {"pid": int(p.pid), "used_gpu_memory_bytes": getattr(p, "usedGpuMemory", None)}
            for p in running
        ]
    graphics = nvml("nvmlDeviceGetGraphicsRunningProcesses", handle)
    snap["nvml_graphics_process_pids"] = (
        graphics if isinstance(graphics, dict) else [int(p.pid) for p in graphics]
    )
    pids = sorted(
        {child_pid}
        if child_pid
        else set()
        | {p["pid"] for p in snap["nvml_compute_processes"] if isinstance(p, dict) and "pid" in p}
    )
    per_pid = {}
    for pid in pids:
        status = proc_text(f"/proc/{pid}/status")
        cmdline = proc_text(f"/proc/{pid}/cmdline")
        per_pid[str(pid)] = {
            "cgroup": proc_text(f"/proc/{pid}/cgroup"),
            "status_ids": (
                [ln for ln in status.splitlines() if ln.split(":")[0] in ("Uid", "Gid", "NSpid")]
                if isinstance(status, str)
                else status
            ),
            "cmdline": cmdline.split("\0")[:-1] if isinstance(cmdline, str) else cmdline,
        }
    snap["per_pid"] = per_pid
    snap["self_pid"] = os.getpid()
    snap["self_cgroup"] = proc_text("/proc/self/cgroup")
    snap["init_cgroup"] = proc_text("/proc/1/cgroup")
    snap["cgroup_fs_type"] = run_text(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"])
    mountinfo = proc_text("/proc/self/mountinfo")
    snap["cgroup_mounts"] = (
        [ln for ln in mountinfo.splitlines() if "cgroup" in ln]
        if isinstance(mountinfo, str)
        else mountinfo
    )
    snap["agent_processes"] = run_text([sys.executable, "-m", "collectors.agent", "processes"])
    return snap


def gemm_child(deadline_start: float, deadline_end: float) -> int:
    """Back-to-back 8192^3 bf16 GEMMs between two wall-clock times; JSON lines on stdout."""

    def say(**event: Any) -> None:
        print(json.dumps({"pid": os.getpid(), "wall": time.time(), **event}), flush=True)

    try:
        import torch

        say(
            event="ready",
            torch=torch.__version__,
            cuda=torch.version.cuda,
            device=torch.cuda.get_device_name(0),
        )
        n = 8192
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        say(event="allocated", bytes=torch.cuda.memory_allocated())
        while time.time() < deadline_start:
            time.sleep(0.01)
        say(event="gemm_start")
        iterations, began = 0, time.time()
        while time.time() < deadline_end:
            for _ in range(50):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
            iterations += 50
        elapsed = time.time() - began
        say(
            event="gemm_stop",
            iterations=iterations,
            seconds=round(elapsed, 3),
            tflops=round(2 * n**3 * iterations / elapsed / 1e12, 1),
        )
    except Exception as exc:
        say(event="error", **err(exc))
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--load-start", type=float, default=10.0)
    parser.add_argument("--load-end", type=float, default=30.0)
    parser.add_argument("--gemm-child", nargs=2, type=float, metavar=("START", "END"))
    args = parser.parse_args()
    if args.gemm_child:
        return gemm_child(*args.gemm_child)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    meta: dict[str, Any] = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    meta["python"] = sys.version.split()[0]
    meta["pynvml_import_error"] = PYNVML_IMPORT_ERROR
    meta["nvml_init"] = nvml("nvmlInit")
    handle = nvml("nvmlDeviceGetHandleByIndex", 0)
    meta["driver"] = nvml("nvmlSystemGetDriverVersion")
    for key, fn in [
        ("name", "nvmlDeviceGetName"),
        ("uuid", "nvmlDeviceGetUUID"),
        ("power_limit_mw", "nvmlDeviceGetPowerManagementLimit"),
        ("default_power_limit_mw", "nvmlDeviceGetPowerManagementDefaultLimit"),
        ("enforced_power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit"),
        ("power_limit_constraints_mw", "nvmlDeviceGetPowerManagementLimitConstraints"),
    ]:
        meta[key] = nvml(fn, handle)
    meta["settings"] = {
        "seconds": args.seconds,
        "interval": args.interval,
        "load_start": args.load_start,
        "load_end": args.load_end,
    }

    t0 = time.monotonic()
    wall0 = time.time()
    meta["t0_wall"] = wall0
    child_events: list[dict[str, Any]] = []
    try:
        child: subprocess.Popen[str] | None = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--gemm-child",
                str(wall0 + args.load_start),
                str(wall0 + args.load_end),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as exc:
        child, meta["child_start_error"] = None, err(exc)

    def read_child() -> None:
        assert child is not None and child.stdout is not None
        for line in child.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"unparsed": line[:500]}
            event["t"] = round(event.get("wall", time.time()) - wall0, 3)
            child_events.append(event)

    if child is not None:
        threading.Thread(target=read_child, daemon=True).start()

    snapshot: dict[str, Any] = {"error": "not taken"}

    def take_snapshot() -> None:
        nonlocal snapshot
        snapshot = processes_snapshot(handle, child.pid if child else None, t0)

    snap_at = (args.load_start + args.load_end) / 2
    snap_thread = threading.Thread(target=take_snapshot, daemon=True)
    snap_started = False
    samples: list[dict[str, Any]] = []
    k = 0
    while True:
        due = t0 + k * args.interval
        if due - t0 > args.seconds:
            break
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if not snap_started and due - t0 >= snap_at:
            snapshot = {"error": "still running after 60 s"}
            snap_thread.start()
            snap_started = True
        samples.append(sample(handle, t0))
        k += 1
        while t0 + k * args.interval < time.monotonic():  # overran: skip, never bunch up
            k += 1
    snap_thread.join(timeout=60)

    child_rc: Any = None
    child_stderr = ""
    if child is not None:
        try:
            _, child_stderr = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            _, child_stderr = child.communicate()
        child_rc = child.returncode
    meta["child"] = {"rc": child_rc, "events": child_events, "stderr_tail": child_stderr[-4000:]}

    summary = {
        "whole": integrate(samples, 0, args.seconds),
        "idle_before": integrate(samples, 0, args.load_start),
        "load": integrate(samples, args.load_start, args.load_end),
        "idle_after": integrate(samples, args.load_end, args.seconds),
    }
    energy = {"meta": meta, "summary": summary, "samples": samples}
    with (out / "energy-under-load.json").open("w") as stream:
        # One sample a line: a reviewer can read the capture and diffs stay small.
        head = {k: v for k, v in energy.items() if k != "samples"}
        text = json.dumps(head, indent=1)[:-2]
        rows = ",\n  ".join(json.dumps(s, separators=(",", ":")) for s in samples)
        stream.write(text + ',\n "samples": [\n  ' + rows + "\n ]\n}\n")
    snapshot["meta"] = {k: meta[k] for k in ("started_utc", "driver", "name", "uuid")}
    with (out / "gpu-process-cgroup.json").open("w") as stream:
        json.dump(snapshot, stream, indent=1)
        stream.write("\n")
    print(json.dumps(summary, indent=1))
    print("child", json.dumps(meta["child"])[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
