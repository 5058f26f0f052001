"""The sharded demo's dashboard shows how to attach another view while it runs.

The line the demo prints on stderr is hidden behind the dashboard until it quits (and
then that NATS server is gone), so the view carries it as a notice shown on screen.
"""

from __future__ import annotations

from pathlib import Path

from gpufleet.demo_shards import attach_command, demo_viewer, make_signing_keys
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import build_app


async def test_the_attach_command_is_on_the_dashboard_while_the_demo_runs(tmp_path: Path) -> None:
    password = tmp_path / "operator.password"
    password.write_text("s3cret-Pw.77\n")
    _, public_keys = make_signing_keys(tmp_path, 3)
    url, config = "nats://127.0.0.1:4999", tmp_path / "demo-config.toml"
    viewer = demo_viewer(url, password, public_keys, tmp_path, attach_command(url, config), False)
    app = build_app(viewer, state_path=tmp_path / "ui.json")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: any("attach another view with" in t for t in toasts(app)))
        (shown,) = [t for t in toasts(app) if "attach another view with" in t]
    # Toasts wrap long lines: the command is all there once the breaks are taken out.
    assert "watch --attach nats://127.0.0.1:4999 -c" in " ".join(shown.split())
    assert str(config) in "".join(shown.split())
    assert "s3cret-Pw.77" not in "".join(shown.split())
