"""The claim names a silent shard: its stretch is a row of the monitor gaps table, with
its cause, though the other shards kept the fleet's coverage whole."""

from __future__ import annotations

from pathlib import Path

from cluster.history import history_root
from cluster.shards import ShardSpec
from gpufleet.config import parse_config
from gpufleet.shard import shard_data_dir
from ledger.sla.report import build_report, to_json
from tests.cluster.recorded import T0, fleet_ticks, record

STOPPED_AT, RESTARTED_AT = 200, 400  # shard 2 records ticks [0, 200) and [400, 660)


def test_a_silent_shard_is_a_row_of_the_claims_monitor_gaps(tmp_path: Path) -> None:
    ticks = fleet_ticks(6, 660)
    for k in (1, 2, 3):
        spec = ShardSpec(k, 3)
        shard_dir = shard_data_dir(tmp_path, spec)
        if k == 2:
            record(shard_dir, ticks[:STOPPED_AT], spec)
            record(shard_dir, ticks[RESTARTED_AT:], spec)
        else:
            record(shard_dir, ticks, spec)
    contract = parse_config({"sla": {"committed_nodes": 6, "gpu_hour_price": 2}}).sla
    assert contract is not None
    with history_root(tmp_path) as root:
        claim = to_json(build_report(root, contract, "2026-10", T0 + 700))
    silent = [r for r in claim["coverage_log"] if r["cause"] == "shard 2/3 silent"]
    # From its last tick before the stop to its first after it (ticks 1 s apart).
    assert [r["seconds"] for r in silent] == [RESTARTED_AT - (STOPPED_AT - 1)]
    starts = [r["start"] for r in claim["coverage_log"]]
    assert starts == sorted(starts)
