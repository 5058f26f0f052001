"""XID catalog: what an XID means, what NVIDIA says to do, and the verdict that follows.

The rows come from NVIDIA's published XID catalog (``fleet/xid_catalog.py``, generated
with its source and date; regenerate with ``scripts/gen_xid_catalog.py``). The verdict
follows the catalog's *immediate action* (docs/health.md, "XIDs"):

- ``RESET_GPU``, ``RESTART_BM``, ``RESTART_VM`` and the ``WORKFLOW_*`` codes: ``fail``,
  held until the controller sees evidence that the GPU was reset (class ``hardware``);
- ``CONTACT_SUPPORT``, ``CHECK_MECHANICALS``: ``fail``, held the same way;
- ``RESTART_APP`` (and the software remedies ``UPDATE_SWFW``, ``CHECK_UVM``,
  ``RESTART_FM``): ``warn``, held for ``xid_app_hold_s`` after the last one (class ``app``);
- a workflow that depends on context (``WORKFLOW_XID_45``, whose investigatory column
  reads "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)"): the solo action's class
  and verdict, the action named in the reason; beside another XID on the same GPU within
  ``SOLO_WINDOW_S`` it has no verdict of its own and the other XID's stands
  (``fleet.health.gpu``);
- ``IGNORE`` and ``XID_154`` (informational; FI 230 carries the verdict): no verdict
  (class ``info``); the event is still recorded;
- no action assigned yet (codes 162-172) and codes the catalog does not list: the
  configured ``unknown_xid_verdict``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from fleet.model import EventRecord, FleetSnapshot
from fleet.xid_catalog import ROWS

XidClass = Literal["app", "hardware", "info"]
XidVerdict = Literal["ok", "warn", "fail"]

RESET_ACTIONS = frozenset(("RESET_GPU", "RESTART_BM", "RESTART_VM"))
SUPPORT_ACTIONS = frozenset(("CONTACT_SUPPORT", "CHECK_MECHANICALS"))
APP_ACTIONS = frozenset(("RESTART_APP", "UPDATE_SWFW", "CHECK_UVM", "RESTART_FM"))
# What the catalog's action codes ask of an operator, for reason texts.
ACTION_TEXTS = {"RESTART_FM": "restart the fabric manager"}
IGNORE_ACTIONS = frozenset(("IGNORE", "XID_154"))
SOLO_XID = 45  # WORKFLOW_XID_45: "Not Solo: IGNORE (follow other Xid)"
SOLO_WINDOW_S = 60.0  # another XID this close to a 45 makes it "not solo" (our choice)
XID_RECENT_MAX = 256  # occurrence times kept per XID mark (bounds a repetition policy)


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One catalog entry and the verdict its immediate action implies."""

    code: int
    meaning: str  # short text shown in reasons
    xid_class: XidClass
    verdict: XidVerdict | None  # None: the configured unknown_xid_verdict applies
    action: str  # the catalog's immediate action ("" when none is assigned)
    investigatory: str = ""
    mnemonic: str = ""
    description: str = ""  # the catalog's description, verbatim
    applies_to: str = ""


# Reason texts kept from earlier releases (dashboards and alerts match on them); every
# other code shows the catalog's description.
_SHORT_MEANINGS = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint (unused)",
    62: "internal micro-controller halt",
    63: "row-remap / page-retirement event",
    64: "row-remap failure",
    68: "video processor exception",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC escape",
    154: "GPU recovery action changed",
}


def action_class(action: str) -> tuple[XidClass, XidVerdict | None]:
    """The class and verdict a catalog immediate action implies (see the module doc)."""
    if action in RESET_ACTIONS or action.startswith("WORKFLOW_") or action in SUPPORT_ACTIONS:
        return "hardware", "fail"
    if action in APP_ACTIONS:
        return "app", "warn"
    if action in IGNORE_ACTIONS:
        return "info", "ok"
    return "app", None


def solo_action(investigatory: str) -> str | None:
    """The action a context workflow names for a lone XID: ``"Solo: RESTART_FM; ..."``."""
    for part in investigatory.split(";"):
        head, _, action = part.partition(":")
        if head.strip().lower() == "solo" and action.strip():
            return action.strip()
    return None


def applicability(code: int, description: str) -> str:
    """Where the catalog says a code applies: its scope, narrowed where the row does."""
    if description == "Unused":
        return "not emitted by current drivers (catalog: Unused)"
    if 144 <= code <= 150:
        return "NVLink5 systems (Blackwell); decoded by the catalog's 'XID 144-150 Decode' sheet"
    if code in (151, 166, 170):
        return "confidential-computing mode"
    return "data center GPUs, Ampere and newer (the catalog's scope)"


def _from_row(row: tuple[int, str, str, str, str]) -> XidInfo:
    code, mnemonic, description, action, investigatory = row
    cls, verdict = action_class(action)
    meaning = _SHORT_MEANINGS.get(code) or description
    alone = solo_action(investigatory) if action.startswith("WORKFLOW_") else None
    if alone is not None:
        # Judged alone (beside another XID the health rule drops it): the solo action's
        # verdict, and the action in the reason so the operator sees what to do.
        cls, verdict = action_class(alone)
        meaning = f"{meaning}; alone: {alone} ({ACTION_TEXTS.get(alone, alone)})"
    return XidInfo(
        code,
        meaning,
        cls,
        verdict,
        action,
        investigatory,
        mnemonic,
        description,
        applicability(code, description),
    )


CATALOG: dict[int, XidInfo] = {row[0]: _from_row(row) for row in ROWS}


def describe(code: int) -> XidInfo:
    """The catalog entry for ``code``; an unlisted XID takes the unknown verdict.

    An XID the catalog does not list is most likely from a newer driver: GCM calls every
    such XID critical, but draining nodes on an unknown code would punish an
    informational one, so it defaults to warn (``HealthSection.unknown_xid_verdict``).
    """
    known = CATALOG.get(code)
    if known is not None:
        return known
    return XidInfo(code, "not in the catalog", "app", None, "", "look it up in NVIDIA's catalog")


def xid_text(code: int) -> str:
    """Short human text: ``"XID 79: GPU has fallen off the bus"``."""
    return f"XID {code}: {describe(code).meaning}"


REPEAT_KIND = "xid_repeats"


@dataclass(slots=True)
class _Burst:
    first: EventRecord
    last_t: float
    suppressed: int = 0


class XidRepeatFilter:
    """One ``events`` row per burst of identical XIDs, plus one row that counts the rest.

    A node can log hundreds of thousands of identical XIDs (same GPU, same code); the
    verdict keeps one deduplicated mark per code (``XidMark``), and history keeps the
    first event of a burst as it came and, when the burst ends (no repeat for
    ``window_s``), one ``xid_repeats`` row: code the XID, detail how many more and until
    when. Everything that is not an XID passes unchanged.
    """

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._bursts: dict[tuple[str, str | int | None, int], _Burst] = {}

    def filter(self, events: tuple[EventRecord, ...], now: float) -> tuple[EventRecord, ...]:
        """The events to record at ``now``: first XIDs of bursts, ended bursts' counts."""
        out: list[EventRecord] = []
        for event in events:
            if event.kind != "xid" or event.code is None:
                out.append(event)
                continue
            key = (event.node, event.uuid or event.gpu, event.code)
            burst = self._bursts.get(key)
            if burst is not None and event.t - burst.last_t <= self.window_s:
                burst.last_t = max(burst.last_t, event.t)
                burst.suppressed += 1
                continue
            if burst is not None:
                out.extend(_summary(burst))
            self._bursts[key] = _Burst(event, event.t)
            out.append(event)
        out.extend(self._ended(now))
        return tuple(out)

    def for_history(self, snapshot: FleetSnapshot, final: bool = False) -> FleetSnapshot:
        """``snapshot`` with its events filtered for the history (``final``: flush all)."""
        rows = self.filter(snapshot.new_events, snapshot.taken_at)
        if final:
            rows += self.flush()
        return snapshot if rows == snapshot.new_events else replace(snapshot, new_events=rows)

    def flush(self) -> tuple[EventRecord, ...]:
        """Count rows of every open burst (at shutdown)."""
        return self._ended(math.inf)

    def _ended(self, now: float) -> tuple[EventRecord, ...]:
        ended = [k for k, b in self._bursts.items() if now - b.last_t > self.window_s]
        rows = [row for key in ended for row in _summary(self._bursts.pop(key))]
        return tuple(rows)


def _summary(burst: _Burst) -> list[EventRecord]:
    if not burst.suppressed:
        return []
    first = burst.first
    until = datetime.fromtimestamp(burst.last_t, UTC).isoformat(timespec="seconds")
    detail = f"XID {first.code} repeated {burst.suppressed} more times until {until}"
    return [
        EventRecord(
            burst.last_t, first.node, REPEAT_KIND, first.gpu, first.uuid, first.code, detail
        )
    ]
