"""What only the scheduler knows about a job: its name, account, partition and times.

The controller asks a Slurm login node ``squeue --json`` (running and pending jobs)
over SSH, at most every ``[jobs] metadata_every_s``, and keeps the answers in a bounded
cache keyed by job id, so a job that ended keeps its name for the history. The answer
is hostile input: it is size-capped before parsing, decoded into declared shapes
(msgspec), every string cleaned and cut, every time range-checked. Slurm 22.05 writes
times as integers; 23.02 and later as ``{"set", "infinite", "number"}``: both are read.
``sacct --json`` (ended jobs, from slurmdbd) has the same job shape with ``user`` and
``time.start``/``time.end``; :func:`parse_jobs` reads both.
"""

from __future__ import annotations

import asyncio
import shlex
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from collectors.sanitize import clean_text
from fleet.jobs import Describe, Described
from fleet.settings.jobs_section import JobsSection

MAX_EPOCH_S = 253_402_300_799
NAME_CHARS = 256
WORD_CHARS = 64
# A command on the login node: argv in, stdout bytes out (raises on failure).
Runner = Callable[[Sequence[str]], Awaitable[bytes]]


class MetadataError(RuntimeError):
    """The login node's answer could not be had or was not Slurm's JSON.

    ``kind`` says which way it failed, in a word the controller reports once:
    ``ssh`` (could not connect or log in), ``exit`` (the command failed), ``size``
    (over the cap), ``answer`` (not Slurm's JSON), ``timeout``.
    """

    def __init__(self, message: str, kind: str = "answer") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class JobMeta:
    """One job as the scheduler describes it (strings clean; times epoch s or None)."""

    job: str
    name: str
    user: str
    account: str
    partition: str
    state: str
    start: float | None
    end: float | None


class _Time(msgspec.Struct):
    start: Any = None
    end: Any = None


class _Job(msgspec.Struct):
    job_id: int
    name: str = ""
    user_name: str | None = None
    user: str | None = None  # sacct
    account: str = ""
    partition: str = ""
    job_state: Any = None
    state: Any = None  # sacct: {"current": ...}
    start_time: Any = None
    end_time: Any = None
    time: _Time | None = None  # sacct


class _Answer(msgspec.Struct):
    jobs: list[_Job]


_decoder = msgspec.json.Decoder(_Answer)


def parse_jobs(raw: bytes, limit: int) -> list[JobMeta]:
    """The jobs of an ``squeue --json``/``sacct --json`` answer, checked and cleaned.

    Raises:
        MetadataError: not JSON of that shape, or more than ``limit`` jobs.
    """
    try:
        answer = _decoder.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise MetadataError(clean_text(f"not Slurm JSON: {exc}", 300)) from None
    if len(answer.jobs) > limit:
        raise MetadataError(f"{len(answer.jobs)} jobs exceed the cap of {limit}")
    return [_meta(job) for job in answer.jobs if 0 < job.job_id < 1 << 63]


def _meta(job: _Job) -> JobMeta:
    start = _epoch(job.time.start if job.time else job.start_time)
    end = _epoch(job.time.end if job.time else job.end_time)
    state = job.job_state if job.job_state is not None else job.state
    if isinstance(state, dict):
        state = state.get("current")
    if isinstance(state, list):  # 23.02+: a list of flags, the base state first
        state = state[0] if state else ""
    return JobMeta(
        job=str(job.job_id),
        name=clean_text(job.name, NAME_CHARS),
        user=clean_text(job.user_name or job.user or "", WORD_CHARS),
        account=clean_text(job.account, WORD_CHARS),
        partition=clean_text(job.partition, WORD_CHARS),
        state=clean_text(state if isinstance(state, str) else "", WORD_CHARS),
        start=start,
        end=end if end is None or start is None or end >= start else None,
    )


def _epoch(value: Any) -> float | None:
    """Seconds since the epoch, or None (unset, 0, infinite or out of range)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if type(value) is not int or not 0 < value <= MAX_EPOCH_S:
        return None
    return float(value)


def squeue_argv(section: JobsSection) -> list[str]:
    """The login-node command: ``squeue --json``, under ``SLURM_CONF`` when configured."""
    argv = ["squeue", "--json"]
    if section.slurm_conf:
        argv = ["env", f"SLURM_CONF={section.slurm_conf}", *argv]
    return argv


def remote_command(argv: Sequence[str]) -> str:
    """``argv`` as one shell line with every word quoted (the remote shell splits it)."""
    return shlex.join(argv)


class SlurmMetadata:
    """The bounded, refreshed cache of job metadata, filled by a :data:`Runner`."""

    def __init__(self, section: JobsSection, run: Runner) -> None:
        self._section = section
        self._run = run
        self._jobs: OrderedDict[str, JobMeta] = OrderedDict()
        self._asked_at: float | None = None
        self.last_error: str | None = None
        self.last_error_kind: str | None = None  # MetadataError.kind of last_error

    def get(self, job: str) -> JobMeta | None:
        """The cached metadata of ``job`` (None: never seen by the scheduler's answers)."""
        return self._jobs.get(job)

    def __len__(self) -> int:
        return len(self._jobs)

    def due(self, now: float) -> bool:
        """Is it time to ask the login node again?"""
        return self._asked_at is None or now - self._asked_at >= self._section.metadata_every_s

    async def refresh(self, now: float, *, force: bool = False) -> int:
        """Ask the login node once (when due, or ``force``: the caller keeps the
        cadence); the number of jobs it described.

        A failed ask keeps the cache as it was and records :attr:`last_error`.
        """
        if not force and not self.due(now):
            return 0
        self._asked_at = now
        try:
            raw = await asyncio.wait_for(
                self._run(squeue_argv(self._section)), self._section.query_timeout_s
            )
            if len(raw) > self._section.max_output_mib << 20:
                raise MetadataError(f"answer of {len(raw)} bytes exceeds the cap", "size")
            # Tens of MiB of JSON from a large cluster take longer than a tick to decode:
            # off the event loop, whose late ticks the watchdog counts as stalls.
            jobs = await asyncio.to_thread(parse_jobs, raw, self._section.metadata_jobs)
        except TimeoutError:
            return self._failed("timeout", "no answer in time")
        except MetadataError as exc:
            return self._failed(exc.kind, str(exc))
        except OSError as exc:
            return self._failed("ssh", str(exc) or type(exc).__name__)
        self.last_error = self.last_error_kind = None
        self.remember(jobs)
        return len(jobs)

    def _failed(self, kind: str, text: str) -> int:
        self.last_error_kind = kind
        self.last_error = clean_text(text, 300)
        return 0

    def remember(self, jobs: Sequence[JobMeta]) -> None:
        """Add or refresh ``jobs``, dropping the longest-unseen beyond the cap."""
        for meta in jobs:
            self._jobs.pop(meta.job, None)
            self._jobs[meta.job] = meta
        while len(self._jobs) > self._section.metadata_jobs:
            self._jobs.popitem(last=False)


def describer(metadata: SlurmMetadata) -> Describe:
    """The live jobs' ``describe`` (``fleet.jobs.LiveJobs``) answered from this cache."""

    def describe(job: str) -> Described | None:
        meta = metadata.get(job)
        if meta is None:
            return None
        return Described(meta.name, meta.account, meta.partition, meta.user)

    return describe
