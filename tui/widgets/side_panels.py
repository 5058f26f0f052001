"""Failed GPUs, interconnect and SLA-credit panels: re-rendered only when content changes."""

from __future__ import annotations

from collections.abc import Sequence

from textual.reactive import reactive
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from fleet.facade import FleetSnapshot, LogEntry
from tui.fleet_digest import FleetDigest
from tui.log_view import entry_markup, kind_width
from tui.messages import OpenNode
from tui.panels import (
    FailedGpu,
    failed_gpu_markup,
    failed_gpus,
    link_issue_lines,
    quiet_links_text,
    sla_markup,
)


class FailedPanel(OptionList):
    """GPUs that failed, were lost or were flagged by a probe, newest first, one line each;
    selecting one opens its node."""

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None, digest: FleetDigest | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[FailedGpu] = []
        self._minute = -1  # relative times are redrawn once a minute, not every tick
        self._digest = digest if digest is not None else FleetDigest()

    def watch_snapshot(self, snapshot: FleetSnapshot | None) -> None:
        per_node = self._digest.of(snapshot).failed if snapshot is not None else None
        rows = failed_gpus(snapshot, per_node)
        now = snapshot.taken_at if snapshot is not None else None
        minute = int(now // 60) if now is not None else -1
        if rows == self.rows and minute == self._minute:
            return
        self.rows, self._minute = rows, minute
        highlighted = self.highlighted
        self.set_options(Option(failed_gpu_markup(r, now)) for r in rows)
        if rows:
            self.highlighted = min(highlighted or 0, len(rows) - 1)
        self.border_subtitle = f"{len(rows)} GPUs"
        self.set_class(not rows, "-empty")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(OpenNode(self.rows[event.option_index].node))


class InterconnectPanel(Static):
    """Ports down, degraded or erroring; GPUs with NVLink errors."""

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None, digest: FleetDigest | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[str] | None = None
        self._digest = digest if digest is not None else FleetDigest()

    def watch_snapshot(self, snapshot: FleetSnapshot | None) -> None:
        trouble = self._digest.of(snapshot).trouble if snapshot is not None else None
        lines = link_issue_lines(snapshot, trouble=trouble)
        quiet = quiet_links_text(snapshot) if not lines else ""
        key = [*lines, quiet]
        if key == self._shown:
            return
        self._shown = key
        text = "\n".join(lines) if lines else quiet
        self.update(text)
        self.set_class(bool(lines), "-problems")


class SlaPanel(Static):
    """Month-to-date availability against the SLO and the credit it earns."""

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: str | None = None

    def watch_snapshot(self, snapshot: FleetSnapshot | None) -> None:
        sla = snapshot.sla if snapshot is not None else None
        text = sla_markup(sla)
        if text != self._shown:
            self._shown = text
            self.update(text)
        breach = sla is not None and (
            sla.availability_pct is None or sla.availability_pct < sla.slo_pct
        )
        self.set_class(sla is None, "-unconfigured")
        self.set_class(breach, "-breach")


class EventsPanel(Static):
    """The newest entries of the event log (this session's), where the layout has room;
    `l` opens the whole log, from history."""

    EMPTY = "[$muted]nothing happened yet in this session · l: the whole log[/]"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self.EMPTY, id=id)
        self._shown: tuple[int, int] | None = None

    def is_current(self, now: float, total: int) -> bool:
        """Whether what is drawn already fits a log that has had ``total`` entries added
        at ``now`` (the caller then skips gathering the entries)."""
        return (total, int(now // 60)) == self._shown

    def show(self, entries: Sequence[LogEntry], now: float, total: int) -> None:
        """Draw ``entries`` (newest first); redrawn when the log had entries added (its
        count, ``total``, moved) or a minute passed."""
        key = (total, int(now // 60))
        if key == self._shown:
            return
        self._shown = key
        if entries:
            kind_w = kind_width(entries)
            self.update("\n".join(entry_markup(e, now, name_w=9, kind_w=kind_w) for e in entries))
        else:
            self.update(self.EMPTY)
