"""A dashboard on a real terminal (run in a pty by test_tui_notify.py): node-0003 breaks,
the alert goes out, the app quits. ``python -m tests.tui.notify_app STATE_DIR``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets._toast import Toast

from fleet.desk import OperatorDesk
from fleet.model import NodeTransition
from fleet.settings.alerts_section import AlertsSection
from testkit.snapshots import T0, demo_snapshot, lose_gpu
from testkit.static_fleet import StaticFleet
from tui.app import build_app

# A node name a hostile inventory could hold: BEL and ESC must not end the sequence early.
HOSTILE = "node-0003\x07\x1b]0;pwned"


def main(state_dir: Path) -> None:
    healthy = demo_snapshot(4, faults=False)
    node = replace(lose_gpu(healthy.nodes[2], 5, T0 + 60), name=HOSTILE)
    broken = replace(
        healthy,
        taken_at=T0 + 60,
        nodes=(*healthy.nodes[:2], node, healthy.nodes[3]),
        transitions=(NodeTransition(HOSTILE, "broken", T0 + 60, ("GPU 5 lost (XID 79)",)),),
    )
    fleet = StaticFleet([healthy])
    fleet.desk = OperatorDesk(AlertsSection(notify=True), clock=lambda: T0 + 60)
    fleet.desk.observe(healthy)
    app = build_app(fleet, state_path=state_dir / "ui.json", refresh_s=0.0)

    async def break_a_node(pilot: Pilot[None]) -> None:
        fleet.push(broken)
        for _ in range(2000):  # until the alert's notification is on screen
            if any("Alert" in str(t.render()) for t in pilot.app.screen.query(Toast)):
                break
            await pilot.pause(0.01)
        pilot.app.exit()

    app.run(auto_pilot=break_a_node)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
