"""The grid's per-GPU cell looked up for whole percents is the cell gpu_glyph works out,
for every verdict, probe finding and reading (whole, fractional, out of range, none)."""

from __future__ import annotations

import itertools

from fleet.model import GpuBrief
from tui.draw import gpu_glyph
from tui.tick_columns import _glyph

VERDICTS = ("ok", "warn", "fail", "lost", "unknown")
PROBES = (None, "pass", "slow", "straggler", "fail")
READINGS = [float("nan"), -3.0, 0.0, 4.0, 4.5, 5.0, 37.0, 62.5, 99.0, 100.0, 104.0]
READINGS += [float(p) for p in range(101)]


def _brief(lost: bool, verdict: str, probe: str | None) -> GpuBrief:
    return GpuBrief(0, "GPU-0", None, lost, verdict, (), None, None, None, probe)  # type: ignore[arg-type]


def test_looked_up_cells_equal_the_worked_out_ones() -> None:
    for lost, verdict, probe in itertools.product((False, True), VERDICTS, PROBES):
        brief = _brief(lost, verdict, probe)
        for util in READINGS:
            expected = gpu_glyph(lost, verdict, probe, None if util != util else util)  # type: ignore[arg-type]
            assert _glyph(brief, util) == expected, (lost, verdict, probe, util)
