"""Repair records, breaches and lemons from a written history (tests/repairs/scenario.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fleet.settings.contract_section import ContractSection
from ledger.repairs.ledger import RepairsLedger, compute
from ledger.repairs.model import RepairRecord
from ledger.repairs.render import ledger_json
from tests.repairs import scenario
from tests.repairs.scenario import H_MS, T0, ms

END = T0 + timedelta(hours=scenario.END_H)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    scenario.write(tmp_path)
    return tmp_path


def _ledger(data_dir: Path, contract: ContractSection | None = None) -> RepairsLedger:
    return compute(data_dir, T0, END, contract)


def _by_node(led: RepairsLedger, node: str) -> list[RepairRecord]:
    return [r for r in led.records if r.node == node]


def test_each_outage_is_one_record_with_its_kind(history: Path) -> None:
    led = _ledger(history)
    kinds = [(r.node, r.detected_ms, r.kind) for r in led.records]
    assert kinds == [
        ("gpu-d", ms(2), "gpu_swap"),
        ("gpu-b", ms(5), "reboot"),
        ("gpu-a", ms(10), "gpu_swap"),
        ("gpu-c", ms(20), "node_replaced"),
        ("gpu-b", ms(30), "gpu_reset"),
    ]


def test_a_controller_restart_mid_repair_neither_splits_nor_loses_it(history: Path) -> None:
    (swap,) = _by_node(_ledger(history), "gpu-a")
    assert (swap.detected_ms, swap.resolved_ms) == (ms(10), ms(14))
    assert swap.unmonitored_ms == round(0.1 * H_MS)


def test_times_to_ack_action_and_repair(history: Path) -> None:
    (swap,) = _by_node(_ledger(history), "gpu-a")
    assert swap.time_to_ack_ms == round(0.5 * H_MS)
    assert swap.ack is not None and swap.ack.ticket == "T-1"
    assert swap.time_to_action_ms == round(3.9 * H_MS)
    assert swap.time_to_repair_ms == 4 * H_MS
    assert (swap.gpus, swap.serials, swap.failure_class) == ((3,), ("U-a3",), "gpu_xid")


def test_reboot_clearing_an_xid_and_a_reset(history: Path) -> None:
    reboot, reset = _by_node(_ledger(history), "gpu-b")
    assert (reboot.time_to_action_ms, reboot.time_to_repair_ms) == (H_MS // 2, H_MS)
    assert reboot.ack is None
    # A reset is seen only as the GPU judged healthy again: action and repair coincide.
    assert reset.time_to_action_ms == reset.time_to_repair_ms == H_MS
    assert reset.failure_class == "ecc_uncorrectable"


def test_node_replacement_without_a_ticket(history: Path) -> None:
    (replaced,) = _by_node(_ledger(history), "gpu-c")
    assert replaced.failure_class == "unreachable"
    assert replaced.ack is not None and replaced.ack.ticket is None
    assert replaced.time_to_action_ms == round(9.5 * H_MS)
    assert ledger_json(_ledger(history))["repairs"][3]["ticket"] is None


def test_lemon_followed_across_nodes_with_its_chain(history: Path) -> None:
    (lemon,) = _ledger(history).lemons
    assert lemon.serial == "U40"
    assert lemon.moved
    assert lemon.failures == (("gpu-d", ms(2), 1), ("gpu-b", ms(30), 5))


def test_repair_term_breaches_from_ack_or_detection(history: Path) -> None:
    contract = ContractSection(repair_within_hours=4, fast_replacements_per_month=3)
    breaches = _ledger(history, contract).breaches
    # gpu-a: 3.5 h from its ack at 10.5 h, in time; gpu-c: 9 h from its ack at 21 h.
    assert [(b.node, b.clock_from, b.took_ms) for b in breaches] == [
        ("gpu-c", "acknowledged", 9 * H_MS)
    ]


def test_replacements_beyond_the_months_quota_are_not_owed_fast(history: Path) -> None:
    # Two replacements (gpu-d swap, gpu-a swap) use the quota; gpu-c's is the third.
    contract = ContractSection(repair_within_hours=4, fast_replacements_per_month=2)
    assert _ledger(history, contract).breaches == ()


def test_no_repair_term_no_breaches(history: Path) -> None:
    assert _ledger(history, ContractSection()).breaches == ()


def test_a_stopped_history_gives_the_same_ledger_twice(history: Path) -> None:
    first, second = _ledger(history), _ledger(history)
    assert first == second
    assert ledger_json(first) == ledger_json(second)


def test_an_outage_still_open_at_the_end_is_open_and_a_breach(tmp_path: Path) -> None:
    from history.states import StateInterval
    from testkit.synthetic_history import write_state_intervals

    write_state_intervals(
        tmp_path,
        [
            StateInterval("gpu-x", "up", ms(0), ms(40)),
            StateInterval("gpu-x", "broken", ms(40), ms(44)),
            StateInterval("gpu-x", "unmonitored", ms(44), None),  # the controller stopped
        ],
    )
    led = _ledger(tmp_path, ContractSection(repair_within_hours=6))
    (record,) = led.records
    assert (record.kind, record.resolved_ms) == ("open", None)
    assert record.unmonitored_ms == 4 * H_MS
    (breach,) = led.breaches
    assert breach.took_ms == 8 * H_MS  # to the end of the history, not beyond it
