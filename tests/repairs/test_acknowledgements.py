"""Acknowledgements as the repairs ledger reads them: standing, journalled, hostile."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.repairs.evidence import read_acks


def test_standing_and_journalled_acks_are_merged_once(tmp_path: Path) -> None:
    standing = [{"node": "a", "gpu": 1, "note": "x", "at": 100.0, "ticket": "T-9"}]
    (tmp_path / "acknowledged.json").write_text(json.dumps(standing), encoding="utf-8")
    journal = [
        {"node": "a", "gpu": 1, "note": "x", "at": 100.0, "ticket": "T-9"},
        {"node": "b", "gpu": None, "note": "lifted since", "at": 50.0},
    ]
    lines = "".join(json.dumps(row) + "\n" for row in journal) + "not json\n"
    (tmp_path / "acknowledgements.jsonl").write_text(lines, encoding="utf-8")
    acks = read_acks(tmp_path)
    assert [(a.node, a.at_ms, a.ticket) for a in acks] == [
        ("b", 50_000, None),
        ("a", 100_000, "T-9"),
    ]


def test_hostile_rows_are_skipped_and_text_is_bounded(tmp_path: Path) -> None:
    rows = [
        {"node": "a", "gpu": -1, "at": 1.0},
        {"node": "a", "gpu": None, "at": True},
        {"node": 5, "at": 1.0},
        {"node": "a", "at": 1e30},
        {"node": "n" * 10_000, "gpu": None, "at": 2.0, "note": "z" * 10_000, "ticket": "  "},
        "a string",
    ]
    (tmp_path / "acknowledged.json").write_text(json.dumps(rows), encoding="utf-8")
    (ack,) = read_acks(tmp_path)
    assert len(ack.node) == 200 and len(ack.note) == 200 and ack.ticket is None


def test_unreadable_file_is_no_acks(tmp_path: Path) -> None:
    (tmp_path / "acknowledged.json").write_text("{", encoding="utf-8")
    assert read_acks(tmp_path) == []
