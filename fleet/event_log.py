"""The event log: what happened to the fleet, in one time-ordered list of entries.

Two sources make it. History (``node_states`` intervals, the ``events``, ``probes`` and
``transitions`` tables) survives a restart; :class:`SessionLog` derives entries from
consecutive snapshots of this process: GPU and port verdict transitions, connection
changes and probe verdicts as they land (the recording process writes the first three to
``transitions``). :func:`merge_log` joins both, newest first, an entry in both once.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fleet.health.node import starting_up
from fleet.model import EventRecord, FleetSnapshot, GpuSnapshot, NodeSnapshot, PortBrief

log = logging.getLogger(__name__)

Severity = Literal["bad", "warn", "good", "info"]
SESSION_ENTRIES = 5_000
BAD_VERDICTS = frozenset(("fail", "lost"))


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One thing that happened: when, where, what kind, and in words."""

    t: float  # unix seconds
    node: str
    kind: str  # node state (broken/up/unreachable), gpu, port, connection, probe, xid, ...
    text: str
    severity: Severity = "info"
    gpu: int | None = None
    verdict: str | None = None  # the verdict or state entered, for alerts

    @property
    def key(self) -> tuple[int, str, str, str]:
        """Same moment (to the second), node, kind and text: the same entry."""
        return (int(self.t), self.node, self.kind, self.text)


def state_severity(state: str) -> Severity:
    return "good" if state == "up" else "bad"


def transition_text(state: str, reasons: Sequence[str]) -> tuple[str, Severity]:
    """A node transition in words. Start-up is ``connecting`` (information), never
    "unreachable": the node was not heard from yet, nothing failed."""
    if starting_up(state, reasons):
        waiting = "agent started, waiting for its first sample"
        connecting = any(r.startswith("connecting") for r in reasons)
        return f"node connecting: {'no sample yet' if connecting else waiting}", "info"
    text = f"node {state}" + (": " + "; ".join(reasons) if reasons else "")
    return text, state_severity(state)


def _verdict_severity(verdict: str) -> Severity:
    if verdict in BAD_VERDICTS:
        return "bad"
    return "warn" if verdict == "warn" else "good" if verdict == "ok" else "info"


def event_entry(event: EventRecord) -> LogEntry:
    """An agent event (XID, ECC, link, agent error) as a log entry."""
    code = f" {event.code}" if event.code is not None else ""
    where = f"GPU {event.gpu}: " if event.gpu is not None else ""
    text = f"{where}{event.kind}{code}" + (f": {event.detail}" if event.detail else "")
    severity: Severity = "bad" if event.kind in ("xid", "gpu_lost", "agent_fatal") else "warn"
    return LogEntry(event.t, event.node, event.kind, text, severity, event.gpu)


# -- this session ----------------------------------------------------------------------------


class SessionLog:
    """Entries derived from consecutive snapshots of this process (bounded, newest last)."""

    def __init__(self, capacity: int = SESSION_ENTRIES) -> None:
        self.entries: deque[LogEntry] = deque(maxlen=capacity)
        # Entries ever added: a full log keeps its length while new entries come in, so
        # this, not ``len(entries)``, tells a reader whether there is something new.
        self.added = 0
        self._nodes: dict[str, NodeSnapshot] = {}

    def observe(self, snapshot: FleetSnapshot) -> list[LogEntry]:
        """Add (and return) what changed since the previous snapshot."""
        new: list[LogEntry] = []
        for transition in snapshot.transitions:
            text, severity = transition_text(transition.state, transition.reasons)
            new.append(
                LogEntry(
                    transition.at,
                    transition.node,
                    transition.state,
                    text,
                    severity,
                    verdict=transition.state,
                )
            )
        new.extend(event_entry(e) for e in snapshot.new_events)
        t = snapshot.taken_at
        for node in snapshot.nodes:
            before = self._nodes.get(node.name)
            if before is not node:
                if before is not None:
                    new.extend(node_changes(before, node, t))
                self._nodes[node.name] = node
        self.add(new)
        return new

    def add(self, entries: Sequence[LogEntry]) -> None:
        """Keep ``entries`` (newest last); the oldest go once the log is full."""
        self.entries.extend(entries)
        self.added += len(entries)

    def since(self, t: float) -> list[LogEntry]:
        """Entries at or after ``t``, newest first."""
        return [e for e in reversed(self.entries) if e.t >= t]


def node_changes(before: NodeSnapshot, after: NodeSnapshot, t: float) -> list[LogEntry]:
    """Connection, GPU verdict, port verdict and probe verdict changes of one node."""
    out: list[LogEntry] = []
    if before.status != after.status:
        reason = f": {after.status_reason}" if after.status_reason else ""
        severity: Severity = "good" if after.status == "streaming" else "warn"
        out.append(LogEntry(t, after.name, "connection", f"{after.status}{reason}", severity))
    # The same brief tuple: no GPU (or port) verdict changed, nothing to build or compare.
    if before.gpu_briefs is not after.gpu_briefs:
        previous = {g.uuid: g for g in before.gpus}
        for gpu in after.gpus:
            old = previous.get(gpu.uuid)
            if old is not None:
                out.extend(_gpu_changes(after.name, old, gpu, t))
        out = fold_probe_rows(out)
    if before.port_briefs is not after.port_briefs or before.nic_briefs is not after.nic_briefs:
        ports = {p.name: p for p in before.port_briefs + before.nic_briefs}
        for port in after.port_briefs + after.nic_briefs:
            old_port = ports.get(port.name)
            if old_port is not None and old_port.verdict != port.verdict:
                out.append(_port_change(after.name, port, t))
    return out


def _gpu_changes(node: str, old: GpuSnapshot, new: GpuSnapshot, t: float) -> list[LogEntry]:
    out = []
    if old.verdict != new.verdict and new.verdict != "unknown":
        why = f": {'; '.join(new.reasons)}" if new.reasons else ""
        out.append(
            LogEntry(
                new.since or t,
                node,
                "gpu",
                f"GPU {new.index} {new.verdict}{why}",
                _verdict_severity(new.verdict),
                new.index,
                new.verdict,
            )
        )
    if old.probe_verdict != new.probe_verdict and new.probe_verdict is not None:
        verdict = new.probe_verdict
        severity: Severity = "good" if verdict == "pass" else "bad" if verdict == "fail" else "warn"
        out.append(
            LogEntry(
                t,
                node,
                "probe",
                f"GPU {new.index}: probe {verdict}",
                severity,
                new.index,
                verdict,
            )
        )
    return out


PROBE_RANK = {"pass": 0, "slow": 1, "straggler": 2, "fail": 3}


def fold_probe_rows(entries: list[LogEntry]) -> list[LogEntry]:
    """One row per probe of a node, with its worst verdict, instead of one per GPU:
    ``probe fail: GPU 5 fail, GPU 2 slow; 6 pass``."""
    probes = [e for e in entries if e.kind == "probe"]
    if len(probes) < 2:
        return entries
    rest = [e for e in entries if e.kind != "probe"]
    ranked = sorted(probes, key=lambda e: -PROBE_RANK.get(e.verdict or "", 1))
    worst = ranked[0]
    flagged = [f"GPU {e.gpu} {e.verdict}" for e in ranked if e.verdict != "pass"]
    passed = len(probes) - len(flagged)
    detail = ", ".join(flagged) + (f"; {passed} pass" if flagged and passed else "")
    text = f"probe {worst.verdict}: " + (detail or f"{passed} GPUs pass")
    row = LogEntry(worst.t, worst.node, "probe", text, worst.severity, None, worst.verdict)
    return [*rest, row]


def _port_change(node: str, port: PortBrief, t: float) -> LogEntry:
    why = f": {'; '.join(port.reasons)}" if port.reasons else ""
    return LogEntry(
        port.since or t,
        node,
        "port",
        f"{port.name} {port.verdict}{why}",
        _verdict_severity(port.verdict),
        verdict=port.verdict,
    )


FLAP_WINDOW_S = 180.0  # port changes closer than this to each other are one flapping story
FLAP_MIN = 3  # changes of one port within the window before they read as one row


def collapse_flaps(entries: Sequence[LogEntry], window_s: float = FLAP_WINDOW_S) -> list[LogEntry]:
    """A port that keeps changing becomes one row, where its newest change was:
    ``mlx5_0 flapped 9\u00d7 in 3 min, now fail: ...`` (9 changes). ``entries`` newest first."""
    runs: dict[tuple[str, str], list[list[LogEntry]]] = {}
    for entry in entries:
        if entry.kind != "port":
            continue
        key = (entry.node, entry.text.split(" ", 1)[0])
        chains = runs.setdefault(key, [])
        if chains and chains[-1][-1].t - entry.t <= window_s:
            chains[-1].append(entry)
        else:
            chains.append([entry])
    folded: dict[int, LogEntry | None] = {}
    for chains in runs.values():
        for chain in chains:
            if len(chain) >= FLAP_MIN:
                folded[id(chain[0])] = _flap_row(chain)
                folded.update((id(e), None) for e in chain[1:])
    out = []
    for entry in entries:
        row = folded.get(id(entry), entry)
        if row is not None:
            out.append(row)
    return out


def _flap_row(chain: list[LogEntry]) -> LogEntry:
    newest, oldest = chain[0], chain[-1]
    name, _, now = newest.text.partition(" ")
    minutes = max(1, round((newest.t - oldest.t) / 60))
    text = f"{name} flapped {len(chain)}\u00d7 in {minutes} min, now {now}"
    return replace(newest, text=text)


def merge_log(*sources: Sequence[LogEntry], limit: int = 2_000) -> list[LogEntry]:
    """Entries of every source, newest first, each once, at most ``limit``."""
    seen: set[tuple[int, str, str, str]] = set()
    out: list[LogEntry] = []
    for entry in sorted((e for s in sources for e in s), key=lambda e: e.t, reverse=True):
        if entry.key in seen:
            continue
        seen.add(entry.key)
        out.append(entry)
        if len(out) >= limit:
            break
    return out
