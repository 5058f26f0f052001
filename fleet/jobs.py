"""The live job on each GPU, from the nodes' ``jobs`` messages, and the intervals that end.

Each ``jobs`` message replaces its node's previous answer whole (docs/jobs.md): a
(GPU, job, step) pair that appears opens an interval, one that is gone closes it. Times
are the controller's receive times, not the node's clock, so intervals of every node
sit on one time line with the rest of the history. What only the scheduler knows (job
name, account, partition) is added from the login-node cache when it has answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: snapshots carry JobInterval without the protocol
    from collectors.protocol import JobOnGpu, Jobs

# (gpu index, scheduler, job or pod, step)
_Key = tuple[int, str, str, str]


@dataclass(frozen=True)
class JobInterval:
    """One job (or pod) on one GPU from ``start`` to ``end`` (None: still running)."""

    node: str
    gpu: int
    uuid: str
    scheduler: str  # slurm | k8s
    job: str  # Slurm job id, or the pod UID
    step: str  # Slurm step ("" for a pod)
    user: str
    start: float
    end: float | None = None
    via: str = "nvml"  # nvml: processes on the GPU; env: allocated, no process seen
    name: str = ""
    account: str = ""
    partition: str = ""

    def gpu_hours(self, until: float) -> float:
        """Hours this interval covered up to ``until`` (its end when it has one)."""
        end = self.end if self.end is not None else until
        return max(0.0, min(end, until) - self.start) / 3600.0


@dataclass(frozen=True)
class Described:
    """What the scheduler says of a job (the login-node cache's answer)."""

    name: str
    account: str
    partition: str
    user: str = ""


Describe = Callable[[str], Described | None]


def _key(entry: JobOnGpu) -> _Key:
    ident = entry.job if entry.scheduler == "slurm" else entry.pod
    return (entry.gpu, entry.scheduler, ident or "", entry.step or "")


class LiveJobs:
    """Open intervals per node; :meth:`ingest` answers the intervals that just closed."""

    def __init__(self, describe: Describe | None = None) -> None:
        self._open: dict[str, dict[_Key, JobInterval]] = {}
        self._describe = describe
        self._changed: set[str] = set()
        # What each node's snapshot was last given (node_jobs): a new answer from the
        # scheduler changes a node only where its described jobs read differently.
        self._shown: dict[str, tuple[JobInterval, ...]] = {}

    def ingest(self, node: str, message: Jobs, received: float) -> list[JobInterval]:
        """Take a node's ``jobs`` message; the intervals it ended (ended at ``received``)."""
        before = self._open.get(node, {})
        after: dict[_Key, JobInterval] = {}
        for entry in message.jobs:
            key = _key(entry)
            if not key[2]:
                continue
            kept = before.get(key)
            after[key] = kept if kept is not None else self._opened(node, entry, key, received)
        self._open[node] = after
        if after.keys() != before.keys():
            self._changed.add(node)
        return [self._ended(old, received) for key, old in before.items() if key not in after]

    def node_gone(self, node: str, at: float) -> list[JobInterval]:
        """Close every interval of a node that was removed from the fleet."""
        closed = self._open.pop(node, {})
        if closed:
            self._changed.add(node)
        self._shown.pop(node, None)
        return [self._ended(old, at) for old in closed.values()]

    def redescribe(self) -> set[str]:
        """After the scheduler's cache changed: mark the nodes whose jobs now read
        differently (a name or account learned) as changed; those nodes.

        Nodes whose jobs read the same keep their snapshot object (the identity
        contract of ``fleet.model``), so a refresh that taught nothing costs no reader
        any work.
        """
        stale = {
            node
            for node in self._open
            if node not in self._changed and self._shown.get(node, ()) != self._node_view(node)
        }
        self._changed |= stale
        return stale

    def current(self) -> list[JobInterval]:
        """Every open interval, by node then GPU, described where the scheduler answered."""
        return [self._described(i) for node in sorted(self._open) for i in self._sorted(node)]

    def on_gpu(self, node: str, gpu: int) -> list[JobInterval]:
        """The open intervals of one GPU (several when jobs share it)."""
        return [self._described(i) for i in self._sorted(node) if i.gpu == gpu]

    def node_jobs(self, node: str) -> tuple[JobInterval, ...]:
        """The open intervals of one node, by GPU (what its snapshot shows)."""
        shown = self._shown[node] = self._node_view(node)
        return shown

    def _node_view(self, node: str) -> tuple[JobInterval, ...]:
        return tuple(self._described(i) for i in self._sorted(node))

    def _ended(self, interval: JobInterval, at: float) -> JobInterval:
        # History keeps what the scheduler said of the job, as the live view showed it.
        return self._described(replace(interval, end=at))

    def take_changed(self) -> set[str]:
        """The nodes whose jobs changed since the last call (then forgotten)."""
        changed, self._changed = self._changed, set()
        return changed

    def jobs(self) -> set[str]:
        """The ids of every job (and pod) on some GPU now."""
        return {i.job for intervals in self._open.values() for i in intervals.values()}

    def _sorted(self, node: str) -> Iterable[JobInterval]:
        return sorted(self._open.get(node, {}).values(), key=lambda i: (i.gpu, i.job, i.step))

    def _opened(self, node: str, entry: JobOnGpu, key: _Key, at: float) -> JobInterval:
        # A pod's name stands where a Slurm job's name does, its namespace where the
        # account does (the team it runs for): history, reports and filters read them
        # there (docs/jobs.md).
        return JobInterval(
            node=node,
            gpu=entry.gpu,
            uuid=entry.uuid,
            scheduler=entry.scheduler,
            job=key[2],
            step=key[3],
            user=entry.user or (str(entry.uid) if entry.uid is not None else ""),
            start=at,
            via=entry.via,
            name=entry.pod_name or "",
            account=entry.namespace or "",
        )

    def _described(self, interval: JobInterval) -> JobInterval:
        if self._describe is None or interval.scheduler != "slurm":
            return interval
        described = self._describe(interval.job)
        if described is None:
            return interval
        return replace(
            interval,
            name=described.name,
            account=described.account,
            partition=described.partition,
            # The scheduler names the user even where the node knows only a uid.
            user=described.user or interval.user,
        )

    def describe(self, interval: JobInterval) -> JobInterval:
        """``interval`` with the scheduler's name, account and partition when known."""
        return self._described(interval)


def matches_job(intervals: Iterable[JobInterval], text: str) -> bool:
    """The filter's ``job:TEXT``: a job id (or pod UID) equal to it, or a name containing it."""
    needle = text.lower()
    return any(i.job == text or (i.name and needle in i.name.lower()) for i in intervals)


def matches_user(intervals: Iterable[JobInterval], text: str) -> bool:
    """The filter's ``user:NAME``: a job of that user (case-insensitive) on the node."""
    return any(i.user.lower() == text.lower() for i in intervals)


def gpu_job_text(intervals: Iterable[JobInterval], gpu: int) -> str:
    """The job column of one GPU: its job ids, a step's repeats folded (``4242,77``)."""
    ids: list[str] = []
    for interval in intervals:
        if interval.gpu == gpu and interval.job not in ids:
            ids.append(interval.job)
    return ",".join(ids)
