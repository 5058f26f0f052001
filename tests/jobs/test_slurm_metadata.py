"""The login node's answer: squeue/sacct JSON of two Slurm eras, hostile answers, the cache."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.jobs import Described
from fleet.settings.jobs_section import JobsSection
from ledger.jobs.slurm_meta import (
    MetadataError,
    SlurmMetadata,
    describer,
    parse_jobs,
    remote_command,
    squeue_argv,
)

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"


def test_a_recorded_squeue_22_05_answer() -> None:
    """Recorded from the real slurmctld 22.05.8 of tests/jobs/test_real_slurm.py."""
    (job,) = parse_jobs((FIXTURES / "squeue_22.05.json").read_bytes(), 100)
    assert (job.job, job.name, job.user, job.partition, job.state) == (
        "1",
        "gpufleet-probe",
        "root",
        "debug",
        "RUNNING",
    )
    assert job.start == 1795926068.0
    assert job.end == 1827462068.0  # Slurm's "end" of a running job is its time limit


def test_the_23_02_time_objects_and_sacct_shape() -> None:
    raw = json.dumps(
        {
            "jobs": [
                {
                    "job_id": 812,
                    "name": "llama-pretrain",
                    "user_name": "alice",
                    "account": "nlp",
                    "partition": "h100",
                    "job_state": ["RUNNING"],
                    "start_time": {"set": True, "infinite": False, "number": 1767225600},
                    "end_time": {"set": True, "infinite": True, "number": 0},
                },
                {
                    "job_id": 700,
                    "name": "eval",
                    "user": "bob",
                    "account": "vision",
                    "partition": "h100",
                    "state": {"current": ["COMPLETED"]},
                    "time": {"start": 1767200000, "end": 1767203600},
                },
            ]
        }
    ).encode()
    first, second = parse_jobs(raw, 10)
    assert (first.user, first.account, first.state, first.start, first.end) == (
        "alice",
        "nlp",
        "RUNNING",
        1767225600.0,
        None,
    )
    assert (second.user, second.state, second.start, second.end) == (
        "bob",
        "COMPLETED",
        1767200000.0,
        1767203600.0,
    )


def test_hostile_answers() -> None:
    with pytest.raises(MetadataError):
        parse_jobs(b"<html>login banner</html>", 10)
    with pytest.raises(MetadataError):
        parse_jobs(json.dumps({"jobs": [{"job_id": "1; rm"}]}).encode(), 10)
    with pytest.raises(MetadataError, match="cap"):
        parse_jobs(json.dumps({"jobs": [{"job_id": n} for n in range(1, 5)]}).encode(), 3)
    (job,) = parse_jobs(
        json.dumps(
            {
                "jobs": [
                    {
                        "job_id": 5,
                        "name": "\x1b]52;c;cHduZWQ=\x07" + "x" * 5000,
                        "user_name": "eve\nforged 1",
                        "start_time": 10**30,
                        "end_time": -5,
                    }
                ]
            }
        ).encode(),
        10,
    )
    assert "\x1b" not in job.name and len(job.name) <= 256
    assert "\n" not in job.user
    assert (job.start, job.end) == (None, None)


def test_the_remote_command_quotes_every_word() -> None:
    section = JobsSection(login_node="login1", slurm_conf="/etc/slurm/a b;touch x/slurm.conf")
    line = remote_command(squeue_argv(section))
    assert line == "env 'SLURM_CONF=/etc/slurm/a b;touch x/slurm.conf' squeue --json"


async def test_the_cache_is_bounded_and_asks_only_when_due() -> None:
    asked: list[Sequence[str]] = []
    answers = iter(
        [
            json.dumps({"jobs": [{"job_id": n, "name": f"j{n}"} for n in (1, 2, 3)]}).encode(),
            json.dumps({"jobs": [{"job_id": 4, "name": "j4"}]}).encode(),
            b"not json",
        ]
    )

    async def run(argv: Sequence[str]) -> bytes:
        asked.append(argv)
        return next(answers)

    meta = SlurmMetadata(JobsSection(metadata_jobs=3, metadata_every_s=60.0), run)
    assert await meta.refresh(0.0) == 3
    assert await meta.refresh(30.0) == 0  # not due: served from the cache
    assert len(asked) == 1
    assert await meta.refresh(60.0) == 1
    assert meta.get("1") is None  # the oldest answer went to keep three
    assert [meta.get(j).name for j in ("2", "3", "4")] == ["j2", "j3", "j4"]  # type: ignore[union-attr]
    assert await meta.refresh(120.0) == 0
    assert meta.last_error is not None and len(meta) == 3  # a bad answer keeps the cache


async def test_live_jobs_are_described_from_the_cache() -> None:
    async def run(argv: Sequence[str]) -> bytes:
        return json.dumps(
            {"jobs": [{"job_id": 9, "name": "sft", "user_name": "carol", "account": "a1",
                       "partition": "p1"}]}
        ).encode()  # fmt: skip

    meta = SlurmMetadata(JobsSection(), run)
    await meta.refresh(0.0)
    describe = describer(meta)
    assert describe("9") == Described("sft", "a1", "p1", "carol")
    assert describe("10") is None
