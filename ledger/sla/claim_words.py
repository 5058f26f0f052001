"""What keeps a claim from overstating: withheld money, honest precision, unseen slots.

Every surface (the panel's text, Markdown, HTML, JSON) takes its wording from here, so
they agree:

- below ``min_coverage_for_money`` seconds of monitored time the money is "insufficient
  coverage" (JSON ``null`` with a reason); the figure is shown only as a projection;
- downtime is printed to the precision the availability figure implies, so 89.5 %
  never stands beside "0.0 node-hours";
- committed slots no node ever reported for are counted (and named where the contract
  maps resource ids), not folded silently into a low availability;
- a contract without a price or without tiers says so in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ledger.sla.math import HOUR_MS, SlaResult
from ledger.sla.section import SlaSection

INSUFFICIENT = "insufficient coverage"
PROJECTION = "projection, not a claim"
UNSEEN_NAMED = 20  # unseen slots named in one line; the count has the rest


def money_withheld(result: SlaResult, contract: SlaSection) -> str | None:
    """Why no money may be claimed yet (``insufficient coverage: ...``), or None."""
    need_s = contract.min_coverage_for_money
    seen_s = result.monitored_ms / 1000
    if seen_s >= need_s:
        return None
    return f"{INSUFFICIENT}: {_hours(seen_s)} monitored, a money figure needs {_hours(need_s)}"


def _hours(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:,.1f} h"


def contract_note(contract: SlaSection) -> str | None:
    """One line when the contract cannot produce a credit (no price, or no tiers)."""
    no_price = contract.gpu_hour_price == 0
    no_tiers = not contract.tiers
    if no_price and no_tiers:
        return "The contract has no gpu_hour_price and no tiers: availability only, no credit."
    if no_price:
        return "The contract has no gpu_hour_price: credit percentages only, no amounts."
    if no_tiers and contract.credit_model == "tiered":
        return "The contract has no tiers: the tiered credit is always 0 (pro-rata shown)."
    return None


def down_decimals(result: SlaResult, availability_digits: int) -> int:
    """Decimals of node-hours that match an availability printed with
    ``availability_digits`` decimals of a percent: one step of that percentage of the
    committed node-hours observed (at least 1, at most 6)."""
    capacity_h = result.committed_nodes * result.monitored_ms / HOUR_MS
    if capacity_h <= 0:
        return 1
    step = capacity_h * 10.0 ** -(availability_digits + 2)
    return max(1, min(6, math.ceil(-math.log10(step))))


def downtime_text(result: SlaResult, availability_digits: int) -> str:
    """Down node-hours at the availability's precision, e.g. ``0.16800 node-hours``."""
    hours = result.down_node_ms / HOUR_MS / result.weight
    decimals = down_decimals(result, availability_digits)
    text = f"{hours:,.{decimals}f}"
    if hours > 0 and float(text.replace(",", "")) == 0:
        text = f"< {10.0**-decimals:.{decimals}f}"  # something was down: never print 0
    return f"{text} node-hours"


@dataclass(frozen=True, slots=True)
class UnseenSlots:
    """Committed slots no node ever reported for, in the period."""

    count: int
    resource_ids: dict[str, str]  # node -> resource id, for mapped nodes never seen

    def text(self) -> str | None:
        """``16 of 32 committed slots never seen (counted as down): ...``, or None."""
        if self.count <= 0:
            return None
        line = f"{self.count} committed slots never seen (no node reported; counted as down)"
        if self.resource_ids:
            named = [f"{n} ({r})" for n, r in sorted(self.resource_ids.items())][:UNSEEN_NAMED]
            more = len(self.resource_ids) - len(named)
            line += ": " + ", ".join(named) + (f" and {more} more" if more > 0 else "")
        return line


def unseen_slots(result: SlaResult, contract: SlaSection) -> UnseenSlots:
    """How many committed slots had no node in the history, and which mapped ones."""
    seen = set(result.node_coverage)
    count = max(0, contract.committed_nodes - len(seen))
    missing = {n: r for n, r in contract.resource_ids.items() if n not in seen}
    return UnseenSlots(count, missing if count else {})


PANEL_AVAILABILITY_DIGITS = 3  # the panel prints availability with 3 decimals


def panel_money(result: SlaResult, contract: SlaSection, money: str) -> str:
    """The panel's credit line after the tier: ``money`` (the amount as the panel writes
    it), or "insufficient coverage (projection, not a claim: ...)"."""
    if contract.gpu_hour_price == 0 and not contract.tiers:
        return "no credit: the contract has no price and no tiers"
    if money_withheld(result, contract) is None:
        return money
    return f"{INSUFFICIENT} ({PROJECTION}: {money})"


def panel_notes(result: SlaResult, contract: SlaSection) -> tuple[str, ...]:
    """Lines the panel adds under its figures: unseen slots, a contract that cannot credit."""
    notes = (unseen_slots(result, contract).text(), contract_note(contract))
    return tuple(n for n in notes if n)
