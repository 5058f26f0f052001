"""A dashboard on a real terminal (run in a pty by test_tui_ssh.py): `S` on the first
node runs a stand-in for ssh that sends SIGINT to its process group, as ctrl+c does on a
terminal while the app is suspended. ``python -m tests.tui.ssh_app STATE_DIR``."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets._toast import Toast

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tui.app import build_app

STAND_IN = Path(__file__).with_name("ctrl_c_shell.py")


class SshFleet(StaticFleet):
    def ssh_argv(self, node: str) -> list[str]:
        return [sys.executable, str(STAND_IN), node]


def main(state_dir: Path) -> None:
    app = build_app(SshFleet([demo_snapshot(4)]), state_path=state_dir / "ui.json")

    async def ssh_and_back(pilot: Pilot[None]) -> None:
        await pilot.press("S")
        for _ in range(3000):  # until the exit status is on screen: the dashboard is back
            if any("ssh exited" in str(t.render()) for t in pilot.app.screen.query(Toast)):
                break
            await pilot.pause(0.01)
        pilot.app.exit(message="dashboard resumed after the ssh session")

    app.run(auto_pilot=ssh_and_back)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
