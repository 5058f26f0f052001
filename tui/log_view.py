"""Pure content of the event log: one line per entry, filtering, relative times."""

from __future__ import annotations

from collections.abc import Sequence

from textual.markup import escape

from fleet.facade import LogEntry
from tui import format as fmt

SEVERITY_ROLE = {"bad": "gpu-failed", "warn": "gpu-warn", "good": "gpu-ok", "info": "muted"}
LOG_WINDOWS: tuple[tuple[str, float], ...] = (
    ("24 h", 86_400.0),
    ("7 d", 604_800.0),
    ("1 h", 3_600.0),
)


KIND_W = 10
KIND_MAX_W = 16  # repeat_offender, connect_failed: the column grows to this, not beyond


def kind_width(entries: Sequence[LogEntry]) -> int:
    """The kind column's width for ``entries``: the longest kind, within 10..16 cells."""
    longest = max((len(e.kind) for e in entries), default=KIND_W)
    return max(KIND_W, min(KIND_MAX_W, longest))


def entry_markup(
    entry: LogEntry, now: float, name_w: int = 10, with_node: bool = True, kind_w: int = KIND_W
) -> str:
    """``3m ago  21:05:12  node-0003  broken  node broken: GPU 5 lost`` (older than a
    day: with the date) with the severity's colour on the kind and the text."""
    role = SEVERITY_ROLE.get(entry.severity, "muted")
    ago = fmt.ago(entry.t, now).rjust(9)
    # The day only when it is not within the last day: narrow terminals keep the text.
    recent = 0 <= now - entry.t < 86_400
    when = fmt.clock_time(entry.t) if recent else fmt.stamp(entry.t, seconds=True)
    node = f"[b]{escape(entry.node.ljust(name_w))}[/] " if with_node else ""
    return (
        f"[$muted]{ago}  {when}[/]  {node}"
        f"[${role}]{escape(entry.kind.ljust(kind_w))} {escape(entry.text)}[/]"
    )


def filter_entries(entries: Sequence[LogEntry], text: str) -> list[LogEntry]:
    """Entries whose node, kind or text contain every word of ``text`` (any case)."""
    words = text.lower().split()
    if not words:
        return list(entries)
    out = []
    for e in entries:
        haystack = f"{e.node} {e.kind} {e.text} {e.severity}".lower()
        if all(w in haystack for w in words):
            out.append(e)
    return out
