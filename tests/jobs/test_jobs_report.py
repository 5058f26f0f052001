"""The jobs report section, worked by hand.

History (all on 2026-01-01 UTC, node n1, 8 GPUs contracted at 2.50 USD a GPU-hour):
- job 41 (alice, nlp) holds GPUs 0 and 1 from 00:00, never ends;
- job 42 (bob, vision) holds GPU 2 from 01:00 to 03:00;
- XID 79 (fallen off the bus) on GPU 0 at 02:00; XID 13 (an application error, not a
  hardware failure) on GPU 2 at 02:30;
- gpu_minutes 00:00-01:59 for GPUs 0 and 1 at 95 % (working), GPU 2 01:00-02:59 at
  0 % (idle: a 120-minute run, beyond idle_min_minutes = 10).

By hand:
- XID 79 hits job 41 only (GPU 0 is 41's); 41 held 2 GPUs, began 2 h before:
  no checkpoint: 2 GPUs x 2 h = 4.000 GPU-hours lost; checkpoint 30 min: 2 x 0.5 = 1.000.
- XID 13 hits nobody (not a failure).
- Idle: job 42 120 idle GPU-minutes = 2.000 GPU-hours x 2.50 = 5.00 USD; bob 5.00, vision
  5.00; job 41 0 idle of 240 held minutes (2 GPUs x 120).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl

from fleet.jobs import JobInterval
from fleet.settings.contract_section import ContractSection
from fleet.settings.jobs_section import JobsSection
from fleet.xid import describe
from history.jobs import JobHistoryWriter, read_job_history
from history.layout import EVENTS, GPU_MINUTES, SCHEMAS, partition_dir, write_atomic
from history.reader import HistoryReader
from ledger.jobs.hits import incidents
from ledger.jobs.outages import outages_jobs_hit
from ledger.jobs.report import jobs_section
from ledger.jobs.view import job_view
from ledger.report_section import ReportPeriod

DAY = datetime(2026, 1, 1, tzinfo=UTC)
T0 = DAY.timestamp()
H = 3600.0


def _history(data_dir: Path) -> None:
    writer = JobHistoryWriter(data_dir)
    job41 = [
        JobInterval(
            "n1", g, f"GPU-{g}", "slurm", "41", "0", "alice", T0, account="nlp", name="pretrain"
        )
        for g in (0, 1)
    ]
    job42 = JobInterval(
        "n1", 2, "GPU-2", "slurm", "42", "batch", "bob", T0 + H, T0 + 3 * H, account="vision"
    )
    writer.closed([job42])
    writer.flush(job41, T0 + 4 * H)
    events = pl.DataFrame(
        [
            {
                "ts": DAY + timedelta(hours=2),
                "node": "n1",
                "gpu": 0,
                "uuid": "GPU-0",
                "kind": "xid",
                "code": 79,
                "detail": "",
            },
            {
                "ts": DAY + timedelta(hours=2.5),
                "node": "n1",
                "gpu": 2,
                "uuid": "GPU-2",
                "kind": "xid",
                "code": 13,
                "detail": "",
            },
        ],
        schema=SCHEMAS[EVENTS],
    )
    write_atomic(partition_dir(data_dir, EVENTS, DAY.date()) / "e.parquet", events)
    rows = []
    for gpu, first, util in ((0, 0, 95.0), (1, 0, 95.0), (2, 60, 0.0)):
        for minute in range(first, first + 120):
            rows.append(
                {"ts": DAY + timedelta(minutes=minute), "node": "n1", "gpu": gpu,
                 "uuid": f"GPU-{gpu}", "util_mean": util, "util_max": int(util),
                 "sm_active_mean": None, "mem_used_mean_bytes": 0, "power_mean_w": 100.0,
                 "power_max_w": 100.0, "temp_max_c": 40, "verdict": "ok", "samples": 60,
                 "util_samples": 60}
            )  # fmt: skip
    write_atomic(
        partition_dir(data_dir, GPU_MINUTES, DAY.date()) / "m.parquet",
        pl.DataFrame(rows, schema=SCHEMAS[GPU_MINUTES]),
    )


def _period(data_dir: Path) -> ReportPeriod:
    contract = ContractSection(gpu_hour_price=Decimal("2.50"))
    return ReportPeriod(data_dir, DAY, DAY + timedelta(days=1), contract)


def test_the_failure_lists_the_job_it_hit_with_its_lost_gpu_hours(tmp_path: Path) -> None:
    _history(tmp_path)
    section = jobs_section(_period(tmp_path))
    data = section.to_json()
    (incident,) = data["incidents"]
    assert (incident["node"], incident["gpu"], incident["at"]) == ("n1", 0, "2026-01-01T02:00:00Z")
    assert incident["jobs"] == [
        {"job": "41", "user": "alice", "account": "nlp", "name": "pretrain", "gpus": 2,
         "lost_gpu_hours": "4.000"}
    ]  # fmt: skip
    checkpointed = jobs_section(_period(tmp_path), JobsSection(checkpoint_interval_minutes=30))
    assert checkpointed.to_json()["incidents"][0]["jobs"][0]["lost_gpu_hours"] == "1.000"
    assert "| 41 alice (4.000) |" in section.markdown()


def test_idle_gpu_hours_are_attributed_to_the_job_user_and_account_in_money(tmp_path: Path) -> None:
    _history(tmp_path)
    idle = jobs_section(_period(tmp_path)).to_json()["idle"]
    assert idle["user"] == [
        {"user": "bob", "idle_gpu_hours": "2.000", "held_gpu_hours": "2.000", "cost": "5.00"},
        {"user": "alice", "idle_gpu_hours": "0.000", "held_gpu_hours": "4.000", "cost": "0.00"},
    ]
    assert idle["account"][0] == {
        "account": "vision", "idle_gpu_hours": "2.000", "held_gpu_hours": "2.000", "cost": "5.00"
    }  # fmt: skip
    assert [row["job"] for row in idle["job"]] == ["42", "41"]


def test_the_job_view_shows_its_gpus_utilization_and_what_happened(tmp_path: Path) -> None:
    _history(tmp_path)
    reader = HistoryReader(tmp_path)
    found = incidents(reader.events(DAY.date(), DAY.date()), [], reader.probes())
    view = job_view("41", read_job_history(tmp_path), reader.rollups([DAY.date()]), found)
    assert [(g.gpu, g.util_mean, g.minutes, g.end_ms, g.incidents) for g in view] == [
        (0, 95.0, 120, None, ("XID 79: " + describe(79).meaning,)),
        (1, 95.0, 120, None, ()),
    ]


def test_an_outage_of_the_node_names_every_job_on_it(tmp_path: Path) -> None:
    """Outage of n1 at 02:00: job 41 (2 GPUs, 2 h) 4.000; job 42 (1 GPU, began 01:00) 1.000."""
    _history(tmp_path)
    (row,) = outages_jobs_hit([{"node": "n1", "start": "2026-01-01T02:00:00Z"}], tmp_path)
    assert [(j["job"], j["gpus"], j["lost_gpu_hours"]) for j in row["jobs"]] == [
        ("41", 2, "4.000"),
        ("42", 1, "1.000"),
    ]
    (later,) = outages_jobs_hit([{"node": "n1", "start": "2026-01-01T03:00:00Z"}], tmp_path)
    assert [j["job"] for j in later["jobs"]] == ["41"]  # 42 ended at 03:00
