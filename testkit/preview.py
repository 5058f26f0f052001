"""``python -m testkit.preview [NODES]``: the dashboard over a deterministic demo fleet.

A new tick every two seconds changes utilization everywhere, as a live fleet would.
"""

from __future__ import annotations

import sys

from testkit.snapshots import demo_snapshot, retick
from testkit.static_fleet import StaticFleet
from tui.app import build_app


def main(argv: list[str]) -> int:
    nodes = int(argv[0]) if argv else 64
    theme = argv[1] if len(argv) > 1 else None
    fleet = StaticFleet([demo_snapshot(nodes)])
    app = build_app(fleet, theme=theme)

    def tick() -> None:
        latest = fleet.latest()
        if latest is not None:
            fleet.push(retick(latest, latest.taken_at + 2, seed=len(fleet.snapshots)))

    app.call_later(lambda: app.set_interval(2.0, tick))
    app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
