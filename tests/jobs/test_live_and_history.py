"""Live jobs per GPU from ``jobs`` messages, the workload info series, the jobs table."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
from prometheus_client.parser import text_string_to_metric_families

from collectors.protocol import Jobs, decode_line
from exporter.workload import render_workload
from fleet.jobs import Described, LiveJobs, gpu_job_text, matches_job, matches_user
from history.jobs import JobHistoryWriter, read_job_history

UUID0 = "GPU-00000000-1111-2222-3333-444444444444"
UUID1 = "GPU-55555555-6666-7777-8888-999999999999"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _jobs(t: float, *entries: tuple[int, str, str, str]) -> Jobs:
    """A decoded ``jobs`` line: (gpu, uuid, job, step) entries, user alice."""
    body = {
        "type": "jobs",
        "v": 1,
        "t": t,
        "schema": 1,
        "jobs": [
            {"gpu": g, "uuid": u, "scheduler": "slurm", "job": j, "step": s, "user": "alice"}
            for g, u, j, s in entries
        ],
    }
    message = decode_line(json.dumps(body).encode())
    assert isinstance(message, Jobs)
    return message


def _series(text: str) -> list[dict[str, str]]:
    (family,) = text_string_to_metric_families(text)
    return [sample.labels for sample in family.samples]


def test_intervals_open_close_and_one_series_per_gpu_and_job() -> None:
    live = LiveJobs(describe=lambda job: Described("llama", "nlp", "h100") if job == "41" else None)
    assert live.ingest("n1", _jobs(0, (0, UUID0, "41", "0"), (0, UUID0, "41", "1")), T0) == []
    assert live.ingest("n1", _jobs(1, (0, UUID0, "41", "0"), (1, UUID1, "42", "0")), T0 + 60) != []
    text = render_workload(live.current())
    assert (
        subprocess.run(
            ["promtool", "check", "metrics"], input=text.encode(), check=False
        ).returncode
        == 0
    )
    assert _series(text) == [
        {"node": "n1", "gpu": "0", "uuid": UUID0, "job": "41", "user": "alice"},
        {"node": "n1", "gpu": "1", "uuid": UUID1, "job": "42", "user": "alice"},
    ]
    (on_zero,) = live.on_gpu("n1", 0)
    assert (on_zero.name, on_zero.account, on_zero.partition) == ("llama", "nlp", "h100")
    closed = live.ingest("n1", _jobs(2, (1, UUID1, "42", "0")), T0 + 3600)
    assert [(i.job, i.step, i.start, i.end) for i in closed] == [("41", "0", T0, T0 + 3600)]
    assert [s["job"] for s in _series(render_workload(live.current()))] == ["42"]
    live.ingest("n1", _jobs(3), T0 + 7200)
    assert _series(render_workload(live.current())) == []  # gone when the job ends


def test_a_label_value_from_a_node_cannot_forge_a_series() -> None:
    live = LiveJobs()
    live.ingest("n1", _jobs(0, (0, UUID0 + '"} 9\nx{a="', "7", "0")), T0)
    text = render_workload(live.current())
    assert len(_series(text)) == 1


def test_the_jobs_table_round_trips_and_duckdb_reads_it(tmp_path: Path) -> None:
    live = LiveJobs(describe=lambda job: Described("llama", "nlp", "h100"))
    writer = JobHistoryWriter(tmp_path)
    live.ingest("n1", _jobs(0, (0, UUID0, "41", "0"), (1, UUID1, "42", "batch")), T0)
    closed = live.ingest("n1", _jobs(1, (1, UUID1, "42", "batch")), T0 + 5400)
    writer.closed([live.describe(i) for i in closed])
    writer.flush(live.current(), T0 + 5400)
    frame = read_job_history(tmp_path)
    assert frame.select("job", "step", "account", "end").rows() == [
        ("41", "0", "nlp", frame["end"][0]),
        ("42", "batch", "nlp", None),
    ]
    relation = duckdb.sql(
        f"""select job, sum(epoch(coalesce("end", to_timestamp({T0 + 7200}))) - epoch(start)) / 3600
            from read_parquet('{tmp_path}/jobs/**/*.parquet') group by job order by job"""
    )
    assert relation is not None
    hours = relation.fetchall()
    assert hours == [("41", 1.5), ("42", 2.0)]
    # A later flush with the job closed: the open row is replaced, the job counted once.
    closed = live.ingest("n1", _jobs(2), T0 + 7200)
    writer.closed(closed)
    writer.flush(live.current(), T0 + 7200)
    assert read_job_history(tmp_path).height == 2


def test_what_the_screens_and_filters_read() -> None:
    live = LiveJobs(describe=lambda job: Described("llama-pretrain", "nlp", "h100"))
    live.ingest("n1", _jobs(0, (0, UUID0, "41", "0"), (0, UUID0, "41", "1")), T0)
    live.ingest("n2", _jobs(0, (1, UUID1, "42", "0")), T0)
    assert live.take_changed() == {"n1", "n2"}
    live.ingest("n1", _jobs(1, (0, UUID0, "41", "0"), (0, UUID0, "41", "1")), T0 + 10)
    assert live.take_changed() == set()  # the same jobs again: no change to show
    n1 = live.node_jobs("n1")
    assert gpu_job_text(n1, 0) == "41" and gpu_job_text(n1, 1) == ""
    assert matches_job(n1, "41") and matches_job(n1, "pretrain") and not matches_job(n1, "4")
    assert matches_user(n1, "ALICE") and not matches_user(n1, "bob")
