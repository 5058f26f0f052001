"""``gpufleet-agent processes``: one listing of the compute processes on the node's GPUs.

Run on request (the node screen asks every few seconds while it is open), never at
1 Hz: NVML's process query is one of its slower calls and /proc reads scale with the
number of processes. The PIDs come from ``nvmlDeviceGetComputeRunningProcesses``;
the user and the command line come from ``/proc/<pid>`` (``status`` and ``cmdline``),
read under a configurable root so a simulated node can point it at a fake tree.

Everything here is best effort: a process that exits between NVML and /proc is
listed with ``user``/``command`` null; a GPU whose query fails is named in
``errors``. The controller validates and sanitises what comes back.
"""

from __future__ import annotations

import os
import pwd
from typing import Any, Dict, List, Optional

import pynvml

from collectors.agent.nvmlcall import error_name

# A hostile or runaway command line must not make one listing huge: NVML caps a GPU's
# process list at a few hundred entries; 4 KiB of argv says all an operator reads.
MAX_COMMAND_BYTES = 4096
MAX_PROCESSES = 1024


def list_processes(proc_root: str) -> Dict[str, Any]:
    """The node's GPU compute processes as the body of a ``processes`` message.

    Args:
        proc_root: where procfs is mounted (``/proc`` on a real node).

    Returns:
        ``{"processes": [...], "errors": [...]}``; each process has ``gpu``, ``pid``,
        ``uid``, ``user``, ``memory_used_bytes`` and ``command``.
    """
    processes: List[Dict[str, Any]] = []
    errors: List[Dict[str, Any]] = []
    users: Dict[int, str] = {}
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as exc:
        return {"processes": [], "errors": [{"gpu": None, "error": error_name(exc)}]}
    for index in range(count):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            running = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except pynvml.NVMLError as exc:
            errors.append({"gpu": index, "error": error_name(exc)})
            continue
        for entry in running:
            if len(processes) >= MAX_PROCESSES:
                break
            processes.append(_describe(index, entry, proc_root, users))
    return {"processes": processes, "errors": errors}


def _describe(gpu: int, entry: Any, proc_root: str, users: Dict[int, str]) -> Dict[str, Any]:
    pid = int(entry.pid)
    used = getattr(entry, "usedGpuMemory", None)  # None: NVML_VALUE_NOT_AVAILABLE
    uid = _uid(proc_root, pid)
    return {
        "gpu": gpu,
        "pid": pid,
        "uid": uid,
        "user": _user(uid, users) if uid is not None else None,
        "memory_used_bytes": int(used) if used is not None else None,
        "command": _command(proc_root, pid),
    }


def _uid(proc_root: str, pid: int) -> Optional[int]:
    """The real uid from ``/proc/<pid>/status`` (None when the process is gone)."""
    try:
        with open(os.path.join(proc_root, str(pid), "status"), "rb") as stream:
            for raw in stream:
                if raw.startswith(b"Uid:"):
                    return int(raw.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _user(uid: int, users: Dict[int, str]) -> str:
    """The login name of ``uid``; the number itself when the node has no name for it."""
    if uid not in users:
        try:
            users[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            users[uid] = str(uid)
    return users[uid]


def _command(proc_root: str, pid: int) -> Optional[str]:
    """The command line, arguments joined by spaces (None when unreadable)."""
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as stream:
            raw = stream.read(MAX_COMMAND_BYTES + 1)
    except OSError:
        return None
    words = raw[:MAX_COMMAND_BYTES].rstrip(b"\0").split(b"\0")
    return b" ".join(words).decode("utf-8", "replace") or None
