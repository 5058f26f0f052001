"""One GPU identity (one UUID) as the fleet state tracks it between snapshots."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from collectors.protocol import GpuInfo, Value
from fleet.counters import Counter
from fleet.health import GpuFacts, XidMark, judge_gpu
from fleet.model import GpuBrief, Verdict
from fleet.settings.health_section import HealthSection
from fleet.state.layout import FieldIndex, Row, pick, pick_flag, pick_int

if TYPE_CHECKING:
    from fleet.state.build import SteadyGpu
from fleet.xid import describe

_NO_LINKS = np.zeros(0)
# The slow fields the health rules and the reset rule read (counters aside, whose rates
# are worked out on every row).
SLOW_FACTS = (
    "ecc_corr_vol",
    "ecc_unc_vol",
    "retired_sbe",
    "retired_dbe",
    "retired_pending",
    "remap_unc",
    "remap_pending",
    "remap_failure",
    "recovery_action",
    "nvlink_active",
    "nvlink_total",
    "nvlink_replay",
    "nvlink_recovery",
)


def _crc_sum(flit: Value, data: Value) -> int | None:
    if flit is None and data is None:
        return None
    return int(flit or 0) + int(data or 0)


def _reset_between(before: Row, after: Row, index: FieldIndex) -> bool:
    """Do two slow rows show that the GPU was reset (or its driver reloaded) in between?

    Volatile ECC counts go down only at a reset or driver load; a reset applies pending
    remaps and performs the requested recovery action; links retrain after a reset.
    """
    for name in ("ecc_unc_vol", "ecc_corr_vol"):
        old, new = pick_int(before, index[name]), pick_int(after, index[name])
        if old is not None and new is not None and new < old:
            return True
    for name in ("remap_pending", "recovery_action"):
        old, new = pick_int(before, index[name]), pick_int(after, index[name])
        if old and new == 0:
            return True
    total = pick_int(after, index["nvlink_total"])
    old_active = pick_int(before, index["nvlink_active"])
    new_active = pick_int(after, index["nvlink_active"])
    return bool(total and old_active is not None and old_active < total and new_active == total)


class GpuTrack(msgspec.Struct, gc=False, eq=False):
    """Latest readings, counter baselines, XID marks and the verdict of one GPU.

    Made when a GPU identity first says hello and kept for it. What it refers to (rows,
    facts, counters, arrays, briefs) never refers back to a track, so it can be in no
    cycle and the cyclic collector need not track it: 8 objects a node that the settle's
    full collection scanned (bench/bench_gc_tracked.py). Compared by identity.
    """

    info: GpuInfo
    facts: GpuFacts = msgspec.field(default_factory=GpuFacts)
    # The last fast row of the GPU's previous session: a new session's columns start
    # from it (the current session's rows stay with the node, NodeTrack.fast_rows).
    fast: Row | None = None
    slow: Row | None = None
    # Snapshot fields that change only with hello or a slow tick (see state.build).
    slow_values: SteadyGpu | None = None
    errors: tuple[tuple[str, str], ...] = ()
    replay: Counter = msgspec.field(default_factory=Counter)
    recovery: Counter = msgspec.field(default_factory=Counter)
    crc: Counter = msgspec.field(default_factory=Counter)
    # Per-link CRC baselines (flit + data): last good value and its time, NaN: none.
    link_value: np.ndarray = _NO_LINKS
    link_at: np.ndarray = _NO_LINKS
    session_started: float | None = None
    verdict: Verdict = "unknown"
    reasons: tuple[str, ...] = ()
    since: float | None = None
    until: float = math.inf
    rejudge: bool = True  # health facts changed: evaluate the rules again
    brief: GpuBrief | None = None  # None: identity, verdict or links changed
    # NVLink active/total of this session's latest slow row (what its snapshot shows).
    links_shown: tuple[int | None, int | None] = (None, None)

    def new_session(self, info: GpuInfo, at: float) -> None:
        """The agent said hello again: hardware XIDs clear once this GPU answers."""
        self.info = info
        # The new session may order slow fields differently: compare rows within it only.
        self.slow = None
        self.slow_values = None
        self.links_shown = (None, None)
        self.session_started = at
        self.rejudge = True
        self.brief = None

    def apply_fast(self, clock_reasons: int | None, lost: bool, received: float) -> None:
        """Take one tick's fast facts: the clock-event reasons, or that the GPU is lost.

        The row itself stays with the node (``NodeTrack.fast_rows``) and the fleet's
        columns; ``clock_reasons`` is ignored for a lost GPU.
        """
        facts = self.facts
        was_lost = facts.lost and facts.sampled
        if lost != facts.lost or not facts.sampled:
            self.rejudge = True
            self.brief = None
        facts.sampled = True
        facts.lost = lost
        if lost:
            facts.lost_reason = "GPU lost (NVMLError_GpuIsLost)"
        else:
            if clock_reasons != facts.clock_reasons:
                facts.clock_reasons = clock_reasons
                self.rejudge = True
            if self.session_started is not None:
                # A new agent session with this GPU answering: it was reset or rebooted
                # (or only the agent restarted: persistent causes re-assert from readings).
                self.reset_seen(self.session_started, inclusive=True)
                self.session_started = None
            elif was_lost:
                self.reset_seen(received)  # only a reset brings back a GPU that fell off

    def reset_seen(self, at: float, inclusive: bool = False) -> None:
        """Evidence that the GPU was reset at ``at``: hardware XIDs and NVLink holds end."""
        self.rejudge = True
        self.facts.xids = {
            code: mark
            for code, mark in self.facts.xids.items()
            if describe(code).xid_class != "hardware"
            or mark.last_at > at
            or (mark.last_at == at and not inclusive)
        }
        error_at = self.facts.nvlink_error_at
        if error_at is not None and error_at < at:
            self.facts.nvlink_error_at = None

    def apply_slow(self, row: Row | None, t: float, received: float, index: FieldIndex) -> None:
        """Take one slow tick: reliability state and NVLink counters."""
        if row is None:
            return
        row = tuple(row) if len(row) >= len(index) else tuple(index.pad(row))  # see gpu_ingest
        last = self.slow
        if last is not None:
            judged = index.getter(SLOW_FACTS)
            if judged(row) == judged(last):
                self._take_steady_slow(row, t, index)
                return
        if last is not None and _reset_between(last, row, index):
            self.reset_seen(received)
        self.slow = row
        self.slow_values = None
        facts = self.facts
        facts.ecc_unc_vol = pick_int(row, index["ecc_unc_vol"])
        sbe, dbe = pick_int(row, index["retired_sbe"]), pick_int(row, index["retired_dbe"])
        facts.retired_pages = None if sbe is None and dbe is None else (sbe or 0) + (dbe or 0)
        facts.retired_pending = pick_flag(row, index["retired_pending"])
        facts.remap_unc = pick_int(row, index["remap_unc"])
        facts.remap_pending = pick_flag(row, index["remap_pending"])
        facts.remap_failure = pick_flag(row, index["remap_failure"])
        facts.recovery_action = pick_int(row, index["recovery_action"])
        facts.nvlink_active = pick_int(row, index["nvlink_active"])
        facts.nvlink_total = pick_int(row, index["nvlink_total"])
        self._count_nvlink_errors(row, t, index)
        facts.nvlink_crc_rate = self.crc.rate
        self._note_nvlink_errors(received)
        self.rejudge = True
        if self.links_shown != (facts.nvlink_active, facts.nvlink_total):
            self.links_shown = (facts.nvlink_active, facts.nvlink_total)
            self.brief = None

    def _take_steady_slow(self, row: Row, t: float, index: FieldIndex) -> None:
        """A slow row whose health fields equal the last one's: only the counters move.

        The facts would be set to what they hold, no reset shows, no NVLink error
        counter moved; the CRC rate may still change (its first rate, or back to 0).
        """
        self.slow = row
        self.slow_values = None
        self._count_nvlink_errors(row, t, index)
        if self.crc.rate != self.facts.nvlink_crc_rate:
            self.facts.nvlink_crc_rate = self.crc.rate
            self.rejudge = True
        self.rejudge |= self.facts.lost  # see take_link_rates

    def _count_nvlink_errors(self, row: Row, t: float, index: FieldIndex) -> None:
        self.replay.update(pick(row, index["nvlink_replay"]), t)
        self.recovery.update(pick(row, index["nvlink_recovery"]), t)
        flit, data = pick(row, index["nvlink_crc_flit"]), pick(row, index["nvlink_crc_data"])
        self.crc.update(_crc_sum(flit, data), t)

    def _note_nvlink_errors(self, received: float) -> None:
        parts = [
            f"{name} +{counter.delta}"
            for name, counter in (("replay", self.replay), ("recovery", self.recovery))
            if counter.delta
        ]
        if parts:
            self.facts.nvlink_error_at = received
            self.facts.nvlink_error_note = ", ".join(parts)

    def take_link_rates(self, rates: tuple[float, ...]) -> None:
        """Per-link NVLink CRC rates (known ones, in link order) of a slow tick."""
        if rates != self.facts.nvlink_crc_link_rates:  # else the rules would judge the same
            self.facts.nvlink_crc_link_rates = rates
            self.rejudge = True
        # A lost GPU's reason text changes with no rejudge (apply_fast); a slow tick has
        # always judged it again, and still does.
        self.rejudge |= self.facts.lost

    def mark_xid(self, code: int, at: float) -> None:
        """Record an XID on this GPU identity."""
        mark = self.facts.xids.get(code)
        if mark is None:
            self.facts.xids[code] = XidMark(code, at, at)
        else:
            mark.seen(at)
        self.rejudge = True

    def mark_lost(self, reason: str) -> None:
        """The agent reported the GPU lost between samples."""
        self.facts.lost = True
        self.facts.lost_reason = reason
        self.rejudge = True
        self.brief = None

    def judge(self, cfg: HealthSection, now: float) -> None:
        """Re-evaluate the verdict; ``since`` moves only when the verdict changes."""
        self.rejudge = False
        verdict, reasons, until = judge_gpu(self.facts, cfg, now)
        if verdict != self.verdict or self.since is None:
            self.since = now
            self.brief = None
        elif reasons != self.reasons:
            self.brief = None
        self.verdict, self.reasons, self.until = verdict, reasons, until

    def brief_now(self) -> GpuBrief:
        """The GPU's brief: the same object until something in it changed."""
        brief = self.brief
        if brief is None:
            info, facts = self.info, self.facts
            brief = GpuBrief(
                info.index,
                info.uuid,
                info.serial,
                facts.lost,
                self.verdict,
                self.reasons,
                self.since,
                *self.links_shown,
            )
            self.brief = brief
        return brief
