"""The dashboard applies each snapshot when it arrives, whatever ``refresh_s`` says."""

from __future__ import annotations

from collections.abc import Callable

from testkit.snapshots import T0, demo_snapshot, retick
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp

MakeApp = Callable[..., GpuFleetApp]


async def test_a_snapshot_is_applied_when_it_arrives_not_a_refresh_period_later(
    make_app: MakeApp,
) -> None:
    first = demo_snapshot(8)
    fleet = StaticFleet([first])
    # A refresh period far longer than the wait below: a throttle would hold the next
    # snapshot back for a minute (the old behaviour added up to a period of latency).
    app = make_app(fleet, refresh_s=60.0)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is first)
        for k in (1, 2):
            tick = retick(first, T0 + k, seed=k)
            fleet.push(tick)
            await wait_for(pilot, lambda tick=tick: app.shown is tick)
            assert app.main.snapshot is tick
