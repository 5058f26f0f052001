"""One GPU identity (one UUID) as the naive reference tracks it between snapshots: the
object-per-GPU design the fleet state replaced, kept as the oracle for tests/fleet/reference
and the baseline of bench/bench_gpu_ingest.py."""

from __future__ import annotations

import math
from collections.abc import Sequence

from collectors.agent.fields import NVLINK_FIELDS
from collectors.protocol import GpuInfo, Value
from fleet.counters import Counter
from fleet.health import GpuFacts, XidMark, judge_gpu
from fleet.model import GpuSnapshot, Verdict
from fleet.settings.health_section import HealthSection
from fleet.state.layout import FieldIndex, Row, pick, pick_flag, pick_int
from fleet.xid import describe

_LINK_CRC = (NVLINK_FIELDS.index("crc_flit"), NVLINK_FIELDS.index("crc_data"))


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


class GpuTrack:
    """Latest readings, counter baselines, XID marks and the verdict of one GPU."""

    __slots__ = (
        "crc",
        "dirty",
        "errors",
        "facts",
        "fast",
        "info",
        "link_crc",
        "reasons",
        "recovery",
        "rejudge",
        "replay",
        "session_started",
        "since",
        "slow",
        "slow_values",
        "snap",
        "until",
        "verdict",
    )

    def __init__(self, info: GpuInfo) -> None:
        self.info = info
        self.facts = GpuFacts()
        self.fast: Row | None = None
        self.slow: Row | None = None
        # Snapshot fields that change only with hello or a slow tick (see state.build).
        self.slow_values: list[object] | None = None
        self.errors: tuple[tuple[str, str], ...] = ()
        self.replay = Counter()
        self.recovery = Counter()
        self.crc = Counter()
        self.link_crc: list[Counter] = []
        self.session_started: float | None = None
        self.verdict: Verdict = "unknown"
        self.reasons: tuple[str, ...] = ()
        self.since: float | None = None
        self.until = math.inf
        self.dirty = True  # readings changed: build a new snapshot object
        self.rejudge = True  # health facts changed: evaluate the rules again
        self.snap: GpuSnapshot | None = None

    def new_session(self, info: GpuInfo, at: float) -> None:
        """The agent said hello again: hardware XIDs clear once this GPU answers."""
        self.info = info
        # The new session may order slow fields differently: compare rows within it only.
        self.slow = None
        self.slow_values = None
        self.session_started = at
        self.dirty = self.rejudge = True

    def apply_fast(
        self, row: Row | None, lost: bool, clock_index: int | None, received: float
    ) -> None:
        """Take one tick's fast row (None for a lost GPU)."""
        facts = self.facts
        self.fast = row
        self.errors = ()
        was_lost = facts.lost and facts.sampled
        if lost != facts.lost or not facts.sampled:
            self.rejudge = True
        facts.sampled = True
        facts.lost = lost
        if lost:
            facts.lost_reason = "GPU lost (NVMLError_GpuIsLost)"
        else:
            clock_reasons = pick_int(row, clock_index)
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
        self.dirty = True

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
        if len(row) < len(index):
            row = index.pad(row)
        if self.slow is not None and _reset_between(self.slow, row, index):
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
        self.replay.update(pick(row, index["nvlink_replay"]), t)
        self.recovery.update(pick(row, index["nvlink_recovery"]), t)
        flit, data = pick(row, index["nvlink_crc_flit"]), pick(row, index["nvlink_crc_data"])
        self.crc.update(_crc_sum(flit, data), t)
        facts.nvlink_crc_rate = self.crc.rate
        self._note_nvlink_errors(received)
        self.dirty = self.rejudge = True

    def _note_nvlink_errors(self, received: float) -> None:
        parts = [
            f"{name} +{counter.delta}"
            for name, counter in (("replay", self.replay), ("recovery", self.recovery))
            if counter.delta
        ]
        if parts:
            self.facts.nvlink_error_at = received
            self.facts.nvlink_error_note = ", ".join(parts)

    def apply_links(self, links: Sequence[Sequence[Value]] | None, t: float) -> None:
        """Take per-link NVLink counters: per-link CRC rates say how many links are bad."""
        if links is None:
            return
        while len(self.link_crc) < len(links):
            self.link_crc.append(Counter())
        rates = []
        for counter, link in zip(self.link_crc, links, strict=False):
            flit = link[_LINK_CRC[0]] if len(link) > _LINK_CRC[1] else None
            data = link[_LINK_CRC[1]] if len(link) > _LINK_CRC[1] else None
            counter.update(_crc_sum(flit, data), t)
            if counter.rate is not None:
                rates.append(counter.rate)
        self.facts.nvlink_crc_link_rates = tuple(rates)
        self.rejudge = True
        self.slow_values = None

    def mark_xid(self, code: int, at: float) -> None:
        """Record an XID on this GPU identity."""
        mark = self.facts.xids.get(code)
        if mark is None:
            self.facts.xids[code] = XidMark(code, at, at)
        else:
            mark.seen(at)
        self.dirty = self.rejudge = True

    def mark_lost(self, reason: str) -> None:
        """The agent reported the GPU lost between samples."""
        self.facts.lost = True
        self.facts.lost_reason = reason
        self.dirty = self.rejudge = True

    def judge(self, cfg: HealthSection, now: float) -> None:
        """Re-evaluate the verdict; ``since`` moves only when the verdict changes."""
        self.rejudge = False
        verdict, reasons, until = judge_gpu(self.facts, cfg, now)
        if verdict != self.verdict or self.since is None:
            self.since = now
        self.verdict, self.reasons, self.until = verdict, reasons, until
