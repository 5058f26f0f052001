"""Value types the fleet's history answers with or is asked for.

They live below ``history/`` and ``ledger/`` so that both can build them without
reaching up into the UI facade, which re-exports them for the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True, slots=True)
class UtilizationPoint:
    """Fleet utilization for one minute and its rolling average over the chosen window."""

    ts: float  # minute start, unix seconds UTC
    util: float  # mean GPU utilization of the fleet in that minute, percent
    rolling: float  # rolling mean over the window ending at ts, percent


@dataclass(frozen=True, slots=True)
class GpuSeries:
    """Recent full-resolution values of one GPU for sparklines (oldest first)."""

    util: tuple[float | None, ...]
    power_w: tuple[float | None, ...]
    temp_c: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """What the export dialog asks for (see ``gpufleet export``)."""

    path: Path
    since: str = "7d"  # "7d", "24h" or an ISO date
    until: str | None = None
    level: Literal["gpu", "node", "fleet"] = "node"
    resolution: Literal["1m", "1h", "1d"] = "1h"
    format: Literal["parquet", "csv", "json"] = "csv"
