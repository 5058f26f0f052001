"""Whose processes hold each GPU: the renter's, or someone else's (the provider's).

The renter is named by users and process names (``--renter-user``, ``--renter-process``,
from the controller's ``[contract]``). A compute process belongs to the renter when its
owner is one of those users or its name (``/proc/<pid>/comm``) is one of those names;
any other process is foreign: its memory is not the renter's to use, and its load is
not the renter's work. Read on slow ticks only: NVML's process query is slow.
"""

from __future__ import annotations

import os
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import pynvml

from collectors.agent.processes import MAX_PROCESSES, _uid, _user

MIB = 1 << 20
# (foreign MiB, foreign processes, renter processes) of one GPU.
Usage = Tuple[int, int, int]


class RenterIdentity:
    """The renter's users and process names."""

    def __init__(self, users: List[str], processes: List[str]) -> None:
        self.users: FrozenSet[str] = frozenset(users)
        self.processes: FrozenSet[str] = frozenset(processes)
        self._names: Dict[int, str] = {}

    def __bool__(self) -> bool:
        return bool(self.users or self.processes)

    def owns(self, proc_root: str, pid: int) -> bool:
        """Whether process ``pid`` is the renter's (a vanished process is not foreign)."""
        uid = _uid(proc_root, pid)
        if uid is None:
            return True  # it exited between NVML and /proc: nothing holds the GPU now
        if _user(uid, self._names) in self.users:
            return True
        return _comm(proc_root, pid) in self.processes


def _comm(proc_root: str, pid: int) -> Optional[str]:
    try:
        with open(os.path.join(proc_root, str(pid), "comm"), "rb") as stream:
            return stream.read(64).decode("utf-8", "replace").strip()
    except OSError:
        return None


def gpu_usage(handle: Any, proc_root: str, renter: RenterIdentity) -> Usage:
    """One GPU's foreign memory and process counts.

    Raises:
        pynvml.NVMLError: the query failed (the caller reports the fields as failed).
    """
    foreign_bytes = foreign = own = 0
    for entry in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)[:MAX_PROCESSES]:
        if renter.owns(proc_root, int(entry.pid)):
            own += 1
            continue
        foreign += 1
        used = getattr(entry, "usedGpuMemory", None)  # None: NVML_VALUE_NOT_AVAILABLE
        foreign_bytes += int(used) if used is not None else 0
    return foreign_bytes // MIB, foreign, own
