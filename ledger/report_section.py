"""One section of ``gpufleet report``: the shape every ledger hands the report.

The report (``ledger.delivery``'s assembly) asks each ledger for its section of the
period and renders them in order; a ledger knows nothing of the report's formats beyond
JSON-ready values and its own Markdown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from fleet.settings.contract_section import ContractSection


@dataclass(frozen=True)
class ReportPeriod:
    """What a section is asked for: the history, the period [start, end), the contract."""

    data_dir: Path
    start: datetime
    end: datetime
    contract: ContractSection | None


class ReportSection(Protocol):
    """A titled part of the report, as JSON-ready values and as Markdown."""

    @property
    def key(self) -> str:
        """The section's key in the report's JSON (documented in docs/report.md)."""
        ...

    @property
    def title(self) -> str:
        """The heading in Markdown and HTML."""
        ...

    def to_json(self) -> dict[str, Any]:
        """JSON-ready values; money as strings of exact decimals."""
        ...

    def markdown(self) -> str:
        """The section's body in Markdown, without its heading."""
        ...
