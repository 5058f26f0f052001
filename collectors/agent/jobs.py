"""Which scheduler job uses each GPU, read on the node without a scheduler client.

Two sources, both in procfs (read under ``proc_root`` so a simulated node points it at
a fake tree):

- processes on a GPU (NVML's compute processes): each PID's ``/proc/<pid>/cgroup``
  names its Slurm job and step (``.../job_<id>/step_<step>/...``, cgroup v1 and v2) or
  its Kubernetes pod (``kubepods.../pod<uid>...``), with the pod's name and namespace
  where its process tells them (``collectors/agent/pod_identity.py``: heuristics);
- allocations without a process yet (a job that holds GPUs and leaves them idle, which
  is what idle-time accounting needs): a process in a Slurm job's cgroup whose
  ``environ`` names the job's GPUs in ``CUDA_VISIBLE_DEVICES``, as indices or, from
  Slurm 25.11 on, as GPU UUIDs (``GPU-...``/``MIG-...``).

Runs on the slow cadence and the agent sends a ``jobs`` message only when the answer
changes or the refresh period passes (:class:`JobWatch`). Python 3.8, standard library
only; everything is best effort: a process that exits mid-read is skipped.
"""

import os
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import pynvml

from collectors.agent.fields import PROTOCOL_VERSION
from collectors.agent.nvmlcall import error_name
from collectors.agent.pod_identity import pod_identity, read_environ_value
from collectors.agent.processes import _uid, _user

# Version of the ``jobs`` message's body (docs/jobs.md); the envelope's ``v`` is the
# protocol's.
JOBS_SCHEMA = 1
MAX_CGROUP_BYTES = 16384
MAX_SCANNED_PIDS = 65536
MAX_ENTRIES = 4096

# cgroup v1: "6:freezer:/slurm_vm/uid_0/job_1/step_batch" (slurm or slurm_<node> root);
# cgroup v2: "0::/system.slice/slurmstepd.scope/job_1/step_0/user/task_0".
_SLURM = re.compile(r"/job_(\d{1,20})(?:/step_([A-Za-z0-9_]{1,32}))?(?:/|$)")
# cgroupfs driver: "/kubepods/burstable/pod<uid>/<container>"; systemd driver:
# "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/...".
_POD = re.compile(
    r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)
_CONTAINER = re.compile(r"(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?$")


def placement(cgroup_text: str) -> Optional[Dict[str, Any]]:
    """The Slurm job/step or Kubernetes pod a ``/proc/<pid>/cgroup`` text places it in.

    Every line is looked at (v1 lists one per hierarchy, v2 one line ``0::``): Slurm's
    freezer or the unified line names the job; a line naming none is skipped.

    Returns:
        ``{"scheduler": "slurm", "job": "123", "step": "0"|None}``,
        ``{"scheduler": "k8s", "pod": "<uid>", "container": "<id>"|None}``, or None.
    """
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        found = _SLURM.search(path)
        if found:
            return {"scheduler": "slurm", "job": found.group(1), "step": found.group(2)}
        pod = _POD.search(path)
        if pod:
            container = _CONTAINER.search(path.rstrip("/"))
            return {
                "scheduler": "k8s",
                "pod": pod.group(1).replace("_", "-"),
                "container": container.group(1) if container else None,
            }
    return None


def visible_gpus(value: str, uuids: Sequence[str]) -> List[int]:
    """GPU indexes named by a ``CUDA_VISIBLE_DEVICES`` value.

    Indices (``0,1``) are taken as node indices (Slurm's cgroup-less form); UUIDs
    (``GPU-8f1c...``, Slurm 25.11's form, or a prefix of one as CUDA accepts) and MIG
    UUIDs (``MIG-...``, mapped to the parent GPU when the parent's UUID is given as
    ``MIG-<gpu uuid>/...``) are matched against ``uuids`` (index order). Unknown
    entries are dropped; CUDA stops at the first invalid entry, and so does this.
    """
    chosen: List[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        index = _entry_index(entry, uuids)
        if index is None:
            break
        if index not in chosen:
            chosen.append(index)
    return chosen


def _entry_index(entry: str, uuids: Sequence[str]) -> Optional[int]:
    if entry.isdigit():
        index = int(entry)
        return index if index < len(uuids) else None
    lowered = entry.lower()
    if lowered.startswith("mig-"):
        lowered = "gpu-" + lowered[4:].split("/", 1)[0]
    if not lowered.startswith("gpu-") or len(lowered) < 8:
        return None
    matches = [i for i, uuid in enumerate(uuids) if uuid.lower().startswith(lowered)]
    return matches[0] if len(matches) == 1 else None


def read_cgroup(proc_root: str, pid: int) -> Optional[str]:
    """``/proc/<pid>/cgroup`` as text (None when the process is gone)."""
    try:
        with open(os.path.join(proc_root, str(pid), "cgroup"), "rb") as stream:
            return stream.read(MAX_CGROUP_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def read_visible_devices(proc_root: str, pid: int) -> Optional[str]:
    """``CUDA_VISIBLE_DEVICES`` from ``/proc/<pid>/environ`` (None: unset or unreadable)."""
    return read_environ_value(proc_root, pid, "CUDA_VISIBLE_DEVICES")


class _Seen:
    """Jobs found so far, one entry per (GPU, job, step, pod), with a process count."""

    def __init__(self, proc_root: str = "/proc") -> None:
        self.entries: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
        self._proc_root = proc_root
        self._pods: Dict[str, Dict[str, str]] = {}

    def _pod(self, pod: str, pid: int) -> Dict[str, str]:
        """The pod's name and namespace, read once per pod (from its first process)."""
        known = self._pods.get(pod)
        if known is None:
            known = self._pods[pod] = pod_identity(self._proc_root, pid)
        return known

    def add(
        self,
        gpu: int,
        uuid: str,
        where: Dict[str, Any],
        uid: Optional[int],
        via: str,
        users: Dict[int, str],
        pid: Optional[int] = None,
    ) -> None:
        key = (gpu, where["scheduler"], where.get("job"), where.get("step"), where.get("pod"))
        entry = self.entries.get(key)
        if entry is not None:
            entry["processes"] += 1 if via == "nvml" else 0
            return
        if len(self.entries) >= MAX_ENTRIES:
            return
        entry = {"gpu": gpu, "uuid": uuid, "via": via, "processes": 1 if via == "nvml" else 0}
        entry.update(where)
        if where["scheduler"] == "k8s" and pid is not None:
            entry.update(self._pod(where["pod"], pid))
        entry["uid"] = uid
        entry["user"] = _user(uid, users) if uid is not None else None
        self.entries[key] = entry

    def jobs_on(self, gpu: int) -> List[Tuple[Any, ...]]:
        return [key[1:] for key in self.entries if key[0] == gpu]


def attribute(
    proc_root: str,
    gpu_processes: Iterable[Tuple[int, int]],
    uuids: Sequence[str],
    pids: Optional[Iterable[int]] = None,
) -> List[Dict[str, Any]]:
    """The jobs on each GPU, from NVML's processes and from Slurm allocations.

    Args:
        proc_root: where procfs is mounted.
        gpu_processes: ``(gpu index, pid)`` of every compute process NVML lists.
        uuids: the GPUs' UUIDs in index order.
        pids: the node's PIDs to look for allocations in (None: every numeric entry
            of ``proc_root``; bounded by ``MAX_SCANNED_PIDS``).

    Returns:
        One entry per (GPU, job/pod): ``gpu``, ``uuid``, ``scheduler``, ``job``,
        ``step`` or ``pod``/``container`` (and, where the pod's process tells,
        ``pod_name`` and ``namespace``: :mod:`collectors.agent.pod_identity`), ``uid``,
        ``user``, ``processes`` (on the GPU) and ``via`` (``nvml``: a process on the
        GPU; ``env``: allocated, no process).
    """
    seen = _Seen(proc_root)
    users: Dict[int, str] = {}
    for gpu, pid in gpu_processes:
        text = read_cgroup(proc_root, pid)
        where = placement(text) if text is not None else None
        if where is None or not 0 <= gpu < len(uuids):
            continue
        seen.add(gpu, uuids[gpu], where, _uid(proc_root, pid), "nvml", users, pid)
    _allocations(proc_root, uuids, seen, users, pids)
    return sorted(seen.entries.values(), key=_order)


def _allocations(
    proc_root: str,
    uuids: Sequence[str],
    seen: _Seen,
    users: Dict[int, str],
    pids: Optional[Iterable[int]],
) -> None:
    """Add each Slurm job's GPUs named by the environment of one of its processes."""
    done = set()
    for count, pid in enumerate(pids if pids is not None else _all_pids(proc_root)):
        if count >= MAX_SCANNED_PIDS:
            return
        text = read_cgroup(proc_root, pid)
        where = placement(text) if text is not None else None
        if where is None or where["scheduler"] != "slurm":
            continue
        job = (where["job"], where["step"])
        if job in done:
            continue
        value = read_visible_devices(proc_root, pid)
        if value is None:
            continue
        done.add(job)
        uid = _uid(proc_root, pid)
        for gpu in visible_gpus(value, uuids):
            if ("slurm", where["job"], where["step"], None) not in seen.jobs_on(gpu):
                seen.add(gpu, uuids[gpu], where, uid, "env", users)


def _all_pids(proc_root: str) -> List[int]:
    try:
        names = os.listdir(proc_root)
    except OSError:
        return []
    return sorted(int(name) for name in names if name.isdigit())


def _order(entry: Dict[str, Any]) -> Tuple[Any, ...]:
    return (entry["gpu"], entry.get("job") or "", entry.get("step") or "", entry.get("pod") or "")


class JobWatch:
    """Decides when the agent sends ``jobs``: on a change, else every ``refresh_s``."""

    def __init__(self, refresh_s: float = 300.0) -> None:
        self._refresh_s = refresh_s
        self._last: Optional[List[Dict[str, Any]]] = None
        self._sent_at = 0.0

    def body(self, now: float, jobs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        """The ``jobs`` body to send now, or None when nothing changed and it is not due.

        ``processes`` counts move with every fork, so they are not a change on their
        own: only which jobs sit on which GPU is.
        """
        shape = [_identity(entry) for entry in jobs]
        last = None if self._last is None else [_identity(entry) for entry in self._last]
        if shape == last and now - self._sent_at < self._refresh_s:
            return None
        self._last = jobs
        self._sent_at = now
        return {"schema": JOBS_SCHEMA, "jobs": jobs}


def _identity(entry: Dict[str, Any]) -> Tuple[Any, ...]:
    return tuple(entry.get(name) for name in ("gpu", "scheduler", "job", "step", "pod", "uid"))


def list_jobs(proc_root: str, scan: bool = True) -> Dict[str, Any]:
    """Ask NVML for each GPU's compute processes and attribute them (the agent's path).

    Args:
        proc_root: where procfs is mounted.
        scan: also walk every process for Slurm allocations without a GPU process
            (the costly part: one ``cgroup`` read per process on the node).

    Returns:
        ``{"schema": 1, "jobs": [...], "errors": [...]}``.
    """
    errors: List[Dict[str, Any]] = []
    uuids: List[str] = []
    pairs: List[Tuple[int, int]] = []
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as exc:
        failed = [{"gpu": None, "error": error_name(exc)}]
        return {"schema": JOBS_SCHEMA, "jobs": [], "errors": failed}
    for index in range(count):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            uuids.append(_text(pynvml.nvmlDeviceGetUUID(handle)))
            running = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            pairs.extend((index, int(p.pid)) for p in running)
        except pynvml.NVMLError as exc:
            if len(uuids) <= index:
                uuids.append("")
            errors.append({"gpu": index, "error": error_name(exc)})
    jobs = attribute(proc_root, pairs, uuids, None if scan else [])
    return {"schema": JOBS_SCHEMA, "jobs": jobs, "errors": errors}


class JobReporter:
    """The agent's side of ``jobs``: called on each slow tick, answers a message or None.

    NVML's process lists are read on every call; the walk of every process for idle
    allocations runs at most every ``scan_s`` and its finds are reused in between.
    """

    def __init__(self, proc_root: str, refresh_s: float = 300.0, scan_s: float = 60.0) -> None:
        self._proc_root = proc_root
        self._watch = JobWatch(refresh_s)
        self._scan_s = scan_s
        self._scanned_at: Optional[float] = None
        self._allocated: List[Dict[str, Any]] = []

    def poll(self, t: float) -> Optional[Dict[str, Any]]:
        """The ``jobs`` message to send at ``t``, or None (nothing changed, not due)."""
        scan = self._scanned_at is None or t - self._scanned_at >= self._scan_s
        body = list_jobs(self._proc_root, scan)
        if scan:
            self._scanned_at = t
            self._allocated = [e for e in body["jobs"] if e["via"] == "env"]
        else:
            body["jobs"] = _merged(body["jobs"], self._allocated)
        watched = self._watch.body(t, body["jobs"])
        if watched is None:
            return None
        watched["errors"] = body["errors"]
        return jobs_message(t, watched)


def _merged(found: List[Dict[str, Any]], allocated: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``found`` plus the remembered allocations on GPUs where their job has no process."""
    present = {(e["gpu"], e.get("job"), e.get("step")) for e in found}
    extra = [e for e in allocated if (e["gpu"], e.get("job"), e.get("step")) not in present]
    return sorted(found + extra, key=_order)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def jobs_message(t: float, body: Dict[str, Any]) -> Dict[str, Any]:
    """The ``jobs`` protocol message around ``body`` (the shape ``protocol.Jobs`` decodes)."""
    out: Dict[str, Any] = {"v": PROTOCOL_VERSION, "type": "jobs", "t": round(t, 3)}
    out.update(body)
    return out
