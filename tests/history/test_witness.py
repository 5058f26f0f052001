"""The controller's own network: when no witness answers, a lost fleet is unmonitored."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

from history import HistoryRecorder
from history.blindness import NETWORK_DOWN
from history.section import HistorySection
from ledger.sla import sla_for_month
from ledger.sla.section import SlaSection
from testkit.synthetic_history import snapshot
from tests.runtime.waits import wait_until_blocking

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()


def test_a_fleet_lost_while_no_witness_answers_is_unmonitored_not_down_nor_disputed(
    tmp_path: Path,
) -> None:
    witness = socket.create_server(("127.0.0.1", 0))
    port = witness.getsockname()[1]
    recorder = HistoryRecorder(
        tmp_path, HistorySection(flush_interval_s=1), clock=lambda: T0,
        witnesses=(f"127.0.0.1:{port}",),
    )  # fmt: skip
    assert recorder.blindness.witness is not None
    wait_until_blocking(
        lambda: recorder.blindness.witness is not None and recorder.blindness.witness.checks >= 1
    )
    assert not recorder.blindness.witness.network_down
    for s in range(10):
        recorder.record(snapshot(T0 + s, 4))
    witness.close()  # the controller's network goes: the witness refuses from now on
    checks = recorder.blindness.witness.checks
    wait_until_blocking(
        lambda: (
            recorder.blindness.witness is not None
            and recorder.blindness.witness.checks > checks + 1
        )
    )
    assert recorder.blindness.witness.network_down
    for s in range(10, 20):
        lost = snapshot(T0 + s, 4, states=lambda n: "up" if n == 0 else "unreachable")
        recorder.record(lost)
    recorder.close()

    (gap,) = [g for g in recorder.gaps.all() if g.cause == NETWORK_DOWN]
    assert (gap.start_ms, gap.end_ms) == (round((T0 + 9) * 1000), round((T0 + 19) * 1000))
    assert recorder.coverage.all_spans() == [(round(T0 * 1000), round((T0 + 9) * 1000))]
    states = {i.state for i in recorder.states.intervals() if i.node != "gpu-0000"}
    assert states == {"up", "unmonitored"}
    result = sla_for_month(tmp_path, SlaSection(committed_nodes=4), "2026-09", T0 + 60)
    assert result.down_node_ms == 0 and result.outages == () and result.disputed == ()
