"""Every worked example of docs/sla.md ("Contracts as providers write them"), to the cent.

Each test builds the month the example describes, runs the real math on it and checks
the figures the page prints. Change one and the other must change with it.
"""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from gpufleet.config import parse_config
from history.states import StateInterval
from ledger.sla import compute_sla, month_period
from ledger.sla.section import SlaSection

SEPTEMBER = month_period("2026-09", now_ms=None)  # 30 days, 720 h
MONTH_MS = SEPTEMBER.end_ms - SEPTEMBER.start_ms
WHOLE_MONTH = [(SEPTEMBER.start_ms, SEPTEMBER.end_ms)]


def ms(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    """Milliseconds at 2026-09-<day> <hour>:<minute>:<second> UTC."""
    return int(datetime(2026, 9, day, hour, minute, second, tzinfo=UTC).timestamp()) * 1000


DOC = Path(__file__).parents[2] / "docs" / "sla.md"


def doc_contract(index: int) -> SlaSection:
    """The ``index``-th TOML block of "Contracts as providers write them" in docs/sla.md:
    the tests use the page's own contracts, so the page cannot drift from them."""
    text = DOC.read_text(encoding="utf-8").split("### Contracts as providers write them")[1]
    block = re.findall(r"```toml\n(.*?)```", text, re.S)[index]
    section = parse_config(tomllib.loads(block)).sla
    assert section is not None
    return section


def node(name: str, *episodes: tuple[str, int, int, str]) -> list[StateInterval]:
    """``name`` up all month except ``(state, start, end, reason)`` episodes."""
    out, t = [], SEPTEMBER.start_ms
    for state, start, end, reason in episodes:
        out.append(StateInterval(name, "up", t, start))
        out.append(StateInterval(name, state, start, end, (reason,)))  # type: ignore[arg-type]
        t = end
    out.append(StateInterval(name, "up", t, None))
    return out


def test_aws_ec2_instance_level() -> None:
    """Example 1: 4 instances, reachability only, each instance judged alone."""
    contract = doc_contract(0)
    intervals = [
        *node("i-1", ("unreachable", ms(10, 8), ms(10, 13), "timed out connecting")),  # 5 h
        *node("i-2", ("broken", ms(12), ms(12, 10), "GPU 3: xid 79")),  # reachable: not down
        *node("i-3", ("unreachable", ms(20), ms(22, 2), "connection refused")),  # 50 h
        *node("i-4"),
    ]
    r = compute_sla(contract, SEPTEMBER, WHOLE_MONTH, intervals, SEPTEMBER.end_ms)
    by_node = {i.node: i for i in r.instances}
    assert by_node["i-1"].availability_pct == 100 * (1 - Fraction(5, 720))  # 99.3056 %
    assert by_node["i-3"].availability_pct == 100 * (1 - Fraction(50, 720))  # 93.0556 %
    assert by_node["i-2"].availability_pct == by_node["i-4"].availability_pct == 100
    assert [by_node[n].credit for n in ("i-1", "i-2", "i-3", "i-4")] == [
        Decimal("2304.00"), Decimal("0.00"), Decimal("23040.00"), Decimal("0.00"),
    ]  # fmt: skip
    assert r.bill == Decimal("92160.00")
    assert r.owed == Decimal("25344.00")


def test_google_compute_engine_single_instance() -> None:
    """Example 2: a Downtime Period is at least 1 consecutive minute."""
    contract = doc_contract(1)
    intervals = [
        *node("vm-a",
              ("unreachable", ms(3, 4), ms(3, 4, 0, 45), "timed out connecting"),  # 45 s
              ("unreachable", ms(17, 9), ms(17, 9, 50), "no route to host")),  # 50 min
        *node("vm-b"),
    ]  # fmt: skip
    r = compute_sla(contract, SEPTEMBER, WHOLE_MONTH, intervals, SEPTEMBER.end_ms)
    a = next(i for i in r.instances if i.node == "vm-a")
    assert a.availability_pct == 100 * (1 - Fraction(50, 43_200))  # 99.8843 %
    assert a.tier_credit_pct == 10 and a.credit == Decimal("1440.00")
    assert [o.counted for o in r.outages] == [False, True]
    assert r.owed == Decimal("1440.00")


def test_genesis_cloud_with_maintenance() -> None:
    """Example 3: 5-minute Downtime Periods, scheduled maintenance excluded."""
    contract = doc_contract(2)
    intervals = node(
        "gc-1",
        ("unreachable", ms(5, 1), ms(5, 1, 3), "connection refused"),  # 3 min
        ("unreachable", ms(14, 2), ms(14, 6), "connection refused"),  # maintenance
        ("unreachable", ms(20, 10), ms(20, 18), "timed out connecting"),  # 8 h
    )
    r = compute_sla(contract, SEPTEMBER, WHOLE_MONTH, intervals, SEPTEMBER.end_ms)
    (gc,) = r.instances
    assert gc.availability_pct == 100 * (1 - Fraction(480, 43_200 - 240))  # 98.8827 %
    assert gc.tier_credit_pct == 10 and gc.credit == Decimal("1152.00")
    assert r.maintenance_ms == 4 * 3_600_000
    assert [o.counted for o in r.outages] == [False, False, True]
    assert r.owed == Decimal("1152.00")


def test_negotiated_broken_node_contract_in_gpu_hours() -> None:
    """Example 4: a node without 8 healthy GPUs is down, in GPU-hours, fleet-wide, capped."""
    contract = doc_contract(3)
    intervals = [
        *node("n01", ("broken", ms(4, 6), ms(4, 16), "7 of 8 GPUs healthy")),  # 10 h x 1 GPU
        *node("n02", ("unreachable", ms(9, 12), ms(9, 12, 20), "timed out connecting")),
        *node("n03", ("broken", ms(21), ms(23), "6 of 8 GPUs healthy")),  # 48 h x 2 GPUs
    ]
    intervals += [x for n in range(4, 17) for x in node(f"n{n:02d}")]
    r = compute_sla(contract, SEPTEMBER, WHOLE_MONTH, intervals, SEPTEMBER.end_ms)
    assert r.down_node_ms == 106 * 3_600_000  # GPU-hours: 10 + 96
    assert r.availability_pct == 100 * (1 - Fraction(106, 16 * 8 * 720))  # 99.8850 %
    assert r.tier_credit_pct == 10
    assert r.bill == Decimal("218419.20")
    assert r.tiered_credit == Decimal("21841.92") and r.owed == Decimal("21841.92")
    assert r.pro_rata_credit == Decimal("251.22")
    assert not r.capped
    assert [(o.node, o.counted) for o in r.outages] == [
        ("n01", True), ("n02", False), ("n03", True),
    ]  # fmt: skip
    assert r.coverage_pct == 100
    capped = contract.model_copy(update={"credit_cap_percent": Decimal(5)})
    assert compute_sla(capped, SEPTEMBER, WHOLE_MONTH, intervals, SEPTEMBER.end_ms).owed == (
        Decimal("10920.96")  # 5 % of the bill
    )
