"""Acknowledgements keep a journal, so a lifted acknowledgement still dates its repair."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.alerts import ACKS_FILE, ACKS_JOURNAL, Acknowledgements
from fleet.desk import OperatorDesk
from ledger.repairs.evidence import read_acks


def test_a_lifted_acknowledgement_stays_in_the_journal_with_its_ticket(tmp_path: Path) -> None:
    acks = Acknowledgements(tmp_path / ACKS_FILE)
    acks.add("node-003", 5, "GPU fell off the bus", 1_000.0, ticket="  PROV-4711 ")
    acks.add("node-007", None, "IB port down", 1_060.0)
    assert acks.remove("node-003", 5)

    standing = json.loads((tmp_path / ACKS_FILE).read_text())
    assert [row["node"] for row in standing] == ["node-007"]
    journal = [json.loads(line) for line in (tmp_path / ACKS_JOURNAL).read_text().splitlines()]
    assert [(row["node"], row["ticket"]) for row in journal] == [
        ("node-003", "PROV-4711"),
        ("node-007", None),
    ]
    # What the repairs ledger reads: both, the lifted one with its ticket.
    read = read_acks(tmp_path)
    assert [(a.node, a.gpu, a.ticket) for a in read] == [
        ("node-003", 5, "PROV-4711"),
        ("node-007", None, None),
    ]


def test_a_ticket_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    Acknowledgements(tmp_path / ACKS_FILE).add("node-001", None, "", 5.0, ticket="T" * 500)
    again = Acknowledgements(tmp_path / ACKS_FILE)
    ack = again.covering("node-001", None)
    assert ack is not None and ack.ticket == "T" * 200


def test_the_desk_passes_the_ticket_to_the_journal(tmp_path: Path) -> None:
    desk = OperatorDesk(data_dir=tmp_path, clock=lambda: 2_000.0)
    try:
        ack = desk.acknowledge("node-004", 2, "row remap pending", ticket="PROV-99")
    finally:
        desk.close()
    assert ack.ticket == "PROV-99"
    assert [(a.node, a.ticket) for a in read_acks(tmp_path)] == [("node-004", "PROV-99")]
