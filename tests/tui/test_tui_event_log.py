"""Pilot tests of the event log (l), acknowledging (a) and alert notifications."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual.widgets import Input, OptionList, Static

from fleet.event_log import LogEntry
from fleet.model import EventRecord, FleetSnapshot, NodeTransition
from testkit.snapshots import T0, demo_snapshot, lose_gpu, port_down
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import toasts, wait_for
from tui.app import GpuFleetApp
from tui.screens.ack_screen import AckScreen
from tui.screens.event_log_screen import EventLogScreen
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.side_panels import EventsPanel

MakeApp = Callable[..., GpuFleetApp]


def lose(healthy: FleetSnapshot, index: int, t: float) -> FleetSnapshot:
    node = lose_gpu(healthy.nodes[index], 5, t)
    xid = EventRecord(t, node.name, "xid", 5, node.gpus[5].uuid, 79, "fallen off the bus")
    nodes = list(healthy.nodes)
    nodes[index] = node
    return replace(
        healthy,
        taken_at=t,
        nodes=tuple(nodes),
        transitions=(NodeTransition(node.name, "broken", t, ("GPU 5 lost (XID 79)",)),),
        new_events=(xid,),
    )


def log_lines(screen: EventLogScreen) -> list[str]:
    log = screen.query_one("#log", OptionList)
    return [str(log.get_option_at_index(i).prompt) for i in range(log.option_count)]


async def test_event_log_shows_what_happened_filters_and_opens_a_node(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        fleet.push(lose(healthy, 2, T0 + 60))
        await wait_for(pilot, lambda: any("Alert node-0003" in t for t in toasts(app)))
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, EventLogScreen))
        screen = app.screen
        assert isinstance(screen, EventLogScreen)
        await wait_for(pilot, lambda: screen.loaded)
        text = "\n".join(log_lines(screen))
        assert "node broken: GPU 5 lost (XID 79)" in text and "xid 79" in text
        assert "GPU 5 lost" in text and "0s ago" in text and "21:21:00" in text
        screen.query_one("#log-filter", Input).value = "xid NVMLError"
        await wait_for(pilot, lambda: len(screen.shown) == 1)
        assert screen.shown[0].kind == "gpu"  # every word must match
        screen.query_one("#log", OptionList).focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node-0003"


async def test_acknowledged_node_stays_visible_and_stops_alerting(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        await pilot.press("j", "j", "a")
        await wait_for(pilot, lambda: isinstance(app.screen, AckScreen))
        await pilot.press(*"ticket 4711", "enter")
        await wait_for(pilot, lambda: app.screen is app.main)
        held = fleet.desk.acknowledged("node-0003")
        assert held is not None and held.note == "ticket 4711" and held.gpu is None
        fleet.push(lose(healthy, 2, T0 + 60))
        await wait_for(pilot, lambda: grid.rows[2].state == "broken")
        line = grid.render_line(3).text
        assert "BROKEN" in line and "[ack node: ticket 4711]" in line
        fleet.push(lose(healthy, 1, T0 + 61))  # another node breaks: that one alerts
        await wait_for(pilot, lambda: any("Alert node-0002" in t for t in toasts(app)))
        assert not any("Alert node-0003" in t for t in toasts(app))


async def test_events_panel_shows_the_newest_entries_where_there_is_room(
    make_app: MakeApp,
) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(200, 50), notifications=True) as pilot:
        panel = app.main.query_one(EventsPanel)
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        assert "nothing happened yet" in str(panel.content)
        fleet.push(lose(healthy, 2, T0 + 60))
        await wait_for(pilot, lambda: "node broken" in str(panel.content))
        assert "xid 79" in str(panel.content)
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not panel.display)


async def test_a_facade_without_a_desk_gets_a_local_one(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    fleet.desk = None  # as a remote facade without one
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        fleet.push(lose(healthy, 1, T0 + 60))
        await wait_for(pilot, lambda: any("Alert node-0002" in t for t in toasts(app)))
        assert any(e.kind == "broken" for e in app.desk.session.entries)


async def test_node_screen_events_include_verdict_transitions(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        fleet.push(lose(healthy, 2, T0 + 60))
        await wait_for(pilot, lambda: app.main.snapshot is not None
                       and app.main.snapshot.taken_at == T0 + 60)  # fmt: skip
        app.open_node("node-0003")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, NodeScreen)
                and bool(app.screen.query("#events"))
                and "node broken" in str(app.screen.query_one("#events", Static).content)
            ),
        )
        events = str(app.screen.query_one("#events", Static).content)
        assert "GPU 5 lost" in events and "node broken" in events and "xid 79" in events


def flapping(healthy: FleetSnapshot, index: int, changes: int, t0: float) -> list[FleetSnapshot]:
    """Port 0 of node ``index`` going down and up again every 10 s, ``changes`` times."""
    out = []
    for i in range(changes):
        t = t0 + 10 * i
        node = healthy.nodes[index]
        if i % 2 == 0:
            node = port_down(node, 0, t)
        else:
            up = replace(node.ports[0], since=t)
            node = replace(node, ports=(up, *node.ports[1:]))
        nodes = list(healthy.nodes)
        nodes[index] = node
        out.append(replace(healthy, taken_at=t, nodes=tuple(nodes)))
    return out


async def test_events_panel_folds_a_flapping_port_into_one_row(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(200, 50)) as pilot:
        panel = app.main.query_one(EventsPanel)
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        lost = lose(healthy, 2, T0 + 30)
        fleet.push(lost)
        # Ten changes: more than the panel's lines, which would all be this port unfolded.
        for snapshot in flapping(lost, 1, 10, T0 + 60):
            fleet.push(snapshot)
        await wait_for(pilot, lambda: "flapped" in str(panel.content))
        lines = str(panel.content).splitlines()
        port = healthy.nodes[1].ports[0].name
        port_lines = [line for line in lines if port in line]
        assert len(port_lines) == 1
        assert f"{port} flapped 10\u00d7 in 2 min, now ok" in port_lines[0]
        assert any("node broken" in line for line in lines)


async def test_a_full_session_log_still_shows_what_came_in_this_minute(
    make_app: MakeApp,
) -> None:
    """The panel redrew when the log's length moved; a full log keeps its length while
    entries come in, and a GPU lost showed only when the minute turned."""
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(200, 50), notifications=True) as pilot:
        panel = app.main.query_one(EventsPanel)
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        session = app.desk.session
        assert session.entries.maxlen is not None
        filler = LogEntry(T0, "node-0001", "note", "an older entry")
        session.add([filler] * session.entries.maxlen)  # a long session: the log is full
        fleet.push(replace(healthy, taken_at=T0 + 1))
        await wait_for(pilot, lambda: "an older entry" in str(panel.content))
        fleet.push(lose(healthy, 2, T0 + 2))  # the same minute
        await wait_for(pilot, lambda: "node broken" in str(panel.content))
        assert len(session.entries) == session.entries.maxlen
