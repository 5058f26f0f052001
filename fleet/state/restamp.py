"""A node whose judgement holds: its last snapshot with this tick's times and rows.

At 1,000 nodes every node sends a sample every tick, and almost every sample moves only
readings: the fast GPU values, the port counters, ``last_seen`` and ``sampled_at``.
:func:`fleet.state.assemble.refresh` would judge such a node to what it already holds,
building a status view, a node judgement and its ports' rows on the way. Here the node
takes its last snapshot's judged fields as they are, and only its times and this tick's
rows are new (with a slow tick's port hw counters, which no rule reads): one
:class:`StateRows`, two :class:`PortRows` and the NodeSnapshot.

A node qualifies only when every input of ``refresh`` but its times and readings is
what it was at the last refresh (``NodeTrack.facts_moved`` is False, no port's facts
moved in the flush, no hold or staleness deadline has come) and the node was shown
streaming. Anything else takes ``refresh``, which is always right.
"""

from __future__ import annotations

from fleet.health.liveness import silence_deadlines
from fleet.model import NodeSnapshot, restamped_node
from fleet.state.assemble import same_or, steady_readings
from fleet.state.build import QuietSteady, Steady
from fleet.state.node import NodeTrack
from fleet.state.port import PortTrack
from fleet.state.port_tick import PortFrozen
from fleet.state.rows import PortRows, StateRows


def restamped(node: NodeTrack, now: float, tick: PortFrozen) -> NodeSnapshot | None:
    """``node``'s snapshot at ``now`` when its last judgement holds, else None.

    The judgement's deadlines move with the new sample, as the liveness rule sets them
    (:func:`fleet.health.liveness.silence_deadlines`), and no earlier than its GPUs' and
    ports' holds allow.
    """
    last = node.snap
    at = node.last_sample_at
    if (
        last is None
        or at is None
        or node.facts_moved
        or node.ports_changed.since_refresh
        or node.status != "streaming"
        or last.status != "streaming"
        or last.state == "unreachable"
    ):
        return None
    observed_from = max(at, node.watched_since)
    stale_at, unreachable_at = silence_deadlines(observed_from, node.interval, node.cfg)
    earliest = node.earliest
    if earliest is None or now >= min(stale_at, unreachable_at, earliest, node.ports_until):
        return None
    rows = last.rows
    if not isinstance(rows, StateRows):
        return None
    node.until = min(stale_at, unreachable_at, earliest)
    node.dirty = False
    new_rows = StateRows.of(
        rows.gpu_start,
        rows.gpu_briefs,
        (rows.fast, node.fast_rows, _steady(node, rows)),
        rows.errors,
        _rows_now(node, 0, node.ports, rows.ports),
        _rows_now(node, 1, node.nics, rows.nics),
        tick,
    )
    node.hw_moved = False
    return restamped_node(last, node.last_seen, node.sampled_at, new_rows)


def _rows_now(node: NodeTrack, which: int, tracks: list[PortTrack], last: PortRows) -> PortRows:
    """The last ports' briefs and statics with this tick's rows and hw counters.

    Kept as the node's rows of ``tracks`` too: the last refresh's rows (a whole tick's
    decoded port rows per node, held until the next refresh) are no longer reachable.
    """
    rows = node.port_rows_now(which, tracks)
    hw = last.hw
    if node.hw_moved:  # a slow tick's counters: readings, as the rows are
        hw = same_or(hw, tuple(track.hw for track in tracks))
    if last.rows is rows and last.hw is hw:
        return last
    now = PortRows(last.briefs, last.static, rows, hw)
    if node.port_rows.get(id(tracks)) is last:
        node.port_rows[id(tracks)] = now
    return now


def _steady(node: NodeTrack, rows: StateRows) -> Steady:
    """The last steady readings, or a quiet slow tick's (fleet.state.slow_ingest)."""
    if not node.steady_stale:
        return rows.steady_parts
    quiet, hello, layout = node.quiet_slow_rows, node.hello, node.layout
    if quiet is None or hello is None or layout is None:
        return steady_readings(node)  # the GPUs' own (not reached: facts moved then)
    node.steady_stale = False
    node.steady = QuietSteady(hello.gpus, quiet, layout.slow)
    return node.steady
