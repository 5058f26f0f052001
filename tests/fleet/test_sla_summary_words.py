"""The SLA summary the header and panel read carries the ledger's own words."""

from __future__ import annotations

from pathlib import Path

from ledger.sla.summary import sla_summary
from tests.sla.test_claim_never_overstates import PRICED, T0, load_config_text, record


def test_the_summary_withholds_money_in_the_ledgers_words(tmp_path: Path) -> None:
    record(tmp_path)
    summary = sla_summary(tmp_path, load_config_text(PRICED), T0 + 3600)
    assert summary.money_text == "insufficient coverage (projection, not a claim: 46,080.00 USD)"
    assert summary.money_withheld is not None and "insufficient coverage" in summary.money_withheld
    assert summary.down_text == "1.52500 node-hours"
    assert summary.notes == (
        "16 committed slots never seen (no node reported; counted as down): "
        "gpu-0020 (i-020), gpu-0031 (i-031)",
    )
