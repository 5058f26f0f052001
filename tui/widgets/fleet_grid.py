"""The fleet grid: one line per node, drawn with the Line API, or a map of one cell per node.

Lines are cached as Strips keyed by the NodeSnapshot object (unchanged nodes are
the same object each tick), so a tick redraws only the visible lines whose node
changed, and 1,000+ nodes scroll without rendering what is off screen. The map mode
(``m``) fits thousands of nodes on one screen, one glyph each, as all-smi does.
"""

from __future__ import annotations

from typing import ClassVar, get_args

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Offset, Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fleet.facade import FleetSnapshot, NodeSnapshot
from tui.delivery_terms import DeliveryTerms
from tui.draw import Cell, Role
from tui.fleet_digest import FleetDigest
from tui.grid_rows import GridLayout, column_at, header_cells, layout_for, merge, node_cells
from tui.map_view import map_cell, map_header
from tui.messages import OpenNode
from tui.node_view import SortKey, SummaryCache, parse_filter, sort_nodes

ROLE_CLASSES: tuple[str, ...] = get_args(Role)  # one component class per colour role


class FleetGrid(ScrollView, can_focus=True):
    """Nodes of the snapshot, filtered and sorted; a cursor picks one."""

    COMPONENT_CLASSES = {"fleet-grid--header", "fleet-grid--cursor"} | {
        f"fleet-grid--{role}" for role in ROLE_CLASSES
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("left", "step(-1)", "Left (map)", show=False),
        Binding("right", "step(1)", "Right (map)", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
        Binding("enter", "open", "Open node"),
    ]

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)
    sort_key: reactive[SortKey] = reactive("name")
    sort_reverse: reactive[bool] = reactive(False)
    filter_text: reactive[str] = reactive("")
    map_mode: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None, digest: FleetDigest | None = None) -> None:
        super().__init__(id=id)
        self._digest = digest if digest is not None else FleetDigest()
        self.rows: list[NodeSnapshot] = []
        self.cursor = 0
        self._cursor_name: str | None = None
        self._summaries = SummaryCache()
        self._layout = GridLayout()
        self._strips: dict[int, tuple[NodeSnapshot, Strip]] = {}
        self._styles: dict[str, Style] = {}
        self._predicate = parse_filter("")
        self._frame: tuple[Offset, int] | None = None  # set while a frame is rendered
        self.acks: dict[str, str] = {}  # node -> what the operator acknowledged
        self.delivery_terms = DeliveryTerms()  # the contract's, where the facade knows it

    def set_acks(self, acks: dict[str, str]) -> None:
        """The acknowledged nodes (node -> short label); their lines are redrawn."""
        if acks != self.acks:
            self.acks = acks
            self._strips = {}
            self.refresh()

    # -- data --------------------------------------------------------------------------
    def watch_snapshot(self) -> None:
        self._rebuild()

    def watch_sort_key(self) -> None:
        self._rebuild(full=True)
        self._show_cursor()

    def watch_sort_reverse(self) -> None:
        self._rebuild(full=True)
        self._show_cursor()

    def watch_map_mode(self) -> None:
        self._rebuild(full=True)
        self._show_cursor()

    def on_resize(self) -> None:
        self._rebuild(full=True)
        self._show_cursor()

    def watch_filter_text(self, text: str) -> None:
        try:
            self._predicate = parse_filter(text, self.delivery_terms)
        except ValueError:
            return  # the filter box says why; the last valid filter stays
        self._rebuild(full=True)
        self._show_cursor()

    def _rebuild(self, full: bool = False) -> None:
        nodes = self.snapshot.nodes if self.snapshot is not None else ()
        self._summaries.refresh(self.snapshot.columns if self.snapshot is not None else None)
        slots = None
        if self.snapshot is not None:
            digest = self._digest.of(self.snapshot)
            slots = ([gpus for gpus, _, _ in digest.counts], digest.ports)
        layout = layout_for(nodes, max(1, self.scrollable_content_region.width), slots)
        if layout != self._layout:
            self._layout, self._strips, full = layout, {}, True
        pred, summary = self._predicate, self._summaries.get
        old = self.rows
        ordered = sort_nodes(nodes, self.sort_key, self._summaries, self.sort_reverse)
        self.rows = [n for n in ordered if pred(n, summary(n))] if self.filter_text else ordered
        self._strips = {
            id(n): hit for n in self.rows if (hit := self._strips.get(id(n))) and hit[0] is n
        }
        self._place_cursor()
        if self.map_mode:
            self.virtual_size = Size(self.map_columns, self._map_lines + 1)
            self.refresh()
            return
        self.virtual_size = Size(layout.width, len(self.rows) + 1)
        if full or len(old) != len(self.rows):
            self.refresh()
            return
        self._refresh_changed(old)

    def _refresh_changed(self, old: list[NodeSnapshot]) -> None:
        """Repaint the visible lines whose node changed, one region per run of them (a
        tick usually changes every line on screen: one refresh, not one per line)."""
        top = int(self.scroll_offset.y)
        end = min(len(self.rows), top + self.size.height)
        start: int | None = None
        for i in range(top, end + 1):
            changed = i < end and old[i] is not self.rows[i]
            if changed and start is None:
                start = i
            elif not changed and start is not None:
                self.refresh_lines(start + 1, i - start)  # line 0 is the header
                start = None

    def _place_cursor(self) -> None:
        if not self.rows:
            self.cursor = 0
            return
        if self._cursor_name is not None:
            for i, n in enumerate(self.rows):
                if n.name == self._cursor_name:
                    self.cursor = i
                    return
        self.cursor = min(self.cursor, len(self.rows) - 1)
        self._cursor_name = self.rows[self.cursor].name

    @property
    def cursor_node(self) -> NodeSnapshot | None:
        return self.rows[self.cursor] if self.rows else None

    @property
    def map_columns(self) -> int:
        """Nodes per line of the map: the view's width, one cell each."""
        return max(1, self.scrollable_content_region.width)

    @property
    def _map_lines(self) -> int:
        return -(-len(self.rows) // self.map_columns)

    def _line_of(self, index: int) -> int:
        """The content line (0-based, below the header) that shows row ``index``."""
        return index // self.map_columns if self.map_mode else index

    # -- drawing -----------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._strips = {}

    def _style(self, role: str) -> Style:
        style = self._styles.get(role)
        if style is None:
            style = self.get_component_rich_style(f"fleet-grid--{role}")
            self._styles[role] = style
        return style

    def _strip(self, cells: list[Cell]) -> Strip:
        segments = [Segment(text, self._style(role)) for text, role in merge(cells)]
        return Strip(segments)

    def _node_strip(self, node: NodeSnapshot) -> Strip:
        hit = self._strips.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        cells = node_cells(node, self._summaries.get(node), self._layout, self.acks.get(node.name))
        strip = self._strip(cells)
        self._strips[id(node)] = (node, strip)
        return strip

    def _base_style(self) -> Style:
        """The widget's own style (walking the DOM for it on every line is costly)."""
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self.rich_style
        return style

    def _map_line(self, line: int, width: int) -> Strip:
        cols = self.map_columns
        start = line * cols
        segments = []
        for i, node in enumerate(self.rows[start : start + cols], start):
            text, role = map_cell(node, self._summaries.get(node))
            style = self._style(role)
            if i == self.cursor:
                style = style + self._style("cursor") + Style(reverse=True)
            segments.append(Segment(text, style))
        return Strip(segments).crop_extend(0, width, self._base_style())

    def render_lines(self, crop: Region) -> list[Strip]:
        # The view's offset and width, read once a frame: each read walks to the screen.
        self._frame = (self.scroll_offset, self.size.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        (scroll_x, scroll_y), width = self._frame or (self.scroll_offset, self.size.width)
        base = self._base_style()
        if y == 0:
            if self.map_mode:
                cells = map_header(self.cursor_node, len(self.rows), width)
                return self._strip(cells).crop_extend(0, width, base)
            cells = header_cells(self._layout, self.sort_key, self.sort_reverse)
            header = self._strip(cells).apply_style(self._style("header"))
            return header.crop_extend(scroll_x, scroll_x + width, base)
        if self.map_mode:
            return self._map_line(scroll_y + y - 1, width)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        strip = self._node_strip(self.rows[index])
        if index == self.cursor:
            strip = Strip([Segment("▸ ", self._style("text")), *strip.crop(2)])
            if self.has_focus:
                strip = strip.apply_style(self._style("cursor"))
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    # -- cursor ------------------------------------------------------------------------
    def _show_cursor(self) -> None:
        """Scroll so that the cursor row is on screen (below the header line)."""
        top, visible = int(self.scroll_offset.y), max(1, self.size.height - 1)
        line = self._line_of(self.cursor)
        if line < top:
            self.scroll_to(y=line, animate=False)
        elif line >= top + visible:
            self.scroll_to(y=line - visible + 1, animate=False)

    def _move_to(self, index: int) -> None:
        if not self.rows:
            return
        old = self.cursor
        self.cursor = max(0, min(len(self.rows) - 1, index))
        self._cursor_name = self.rows[self.cursor].name
        self._show_cursor()
        if self.map_mode:
            self.refresh(Region(0, 0, self.size.width, 1))  # the header names the cursor's node
        self.refresh_line(self._line_of(old) + 1)
        self.refresh_line(self._line_of(self.cursor) + 1)

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor + delta * (self.map_columns if self.map_mode else 1))

    def action_step(self, delta: int) -> None:
        if self.map_mode:
            self._move_to(self.cursor + delta)
        else:
            self.scroll_to(x=self.scroll_offset.x + 8 * delta, animate=False)

    def action_page(self, direction: int) -> None:
        lines = max(1, self.size.height - 2)
        step = lines * (self.map_columns if self.map_mode else 1)
        self._move_to(self.cursor + direction * step)

    def action_jump(self, where: int) -> None:
        self._move_to(len(self.rows) - 1 if where < 0 else 0)

    def action_open(self) -> None:
        node = self.cursor_node
        if node is not None:
            self.post_message(OpenNode(node.name))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            self._sort_by_click(offset.x + int(self.scroll_offset.x))
            return
        line = int(self.scroll_offset.y) + offset.y - 1
        index = line * self.map_columns + offset.x if self.map_mode else line
        if index < len(self.rows):
            self._move_to(index)
            if event.chain >= 2:
                self.action_open()

    def _sort_by_click(self, x: int) -> None:
        """A click on a column title sorts by it; a second click reverses the order."""
        if self.map_mode:
            return
        key = column_at(self._layout, x)
        if key is None:
            return
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key, self.sort_reverse = key, False

    def on_focus(self) -> None:
        self.refresh_line(self._line_of(self.cursor) + 1)

    def on_blur(self) -> None:
        self.refresh_line(self._line_of(self.cursor) + 1)
