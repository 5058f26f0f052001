"""`p` on an attached dashboard: the shard process runs the real probe; progress comes back.

A `gpufleet serve --shard 1/1` process over two simulated nodes (SSH on loopback),
a real nats-server, and the dashboard attached through NATS only (Pilot).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Static

from cluster.attach import AttachedFleet
from cluster.auth import NatsAuth
from cluster.natsd import LocalNats, start_nats_server
from gpufleet.demo_shards import OPERATOR, make_credentials, shard_processes
from gpufleet.shard import write_targets_file
from testkit.loopback.fleet import LoopbackFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import build_app
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.probe_screen import ProbeScreen

pytestmark = pytest.mark.e2e


def shard_config(url: str, password: Path) -> str:
    return (
        '[fleet]\nhosts = ["node-[001-002]"]\nexpected_gpus = 2\ninterval = 0.5\n'
        f"\n[probes]\nprobe_python = {json.dumps(sys.executable)}\n"
        f"\n[cluster]\nnats_url = {json.dumps(url)}\nnats_user = {json.dumps('shard-1')}\n"
        f"nats_password_file = {json.dumps(str(password))}\n"
    )


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[LocalNats, dict[str, Path]]]:
    """nats-server with a user for the shard and one for the operator (probes need NATS
    to know who asks)."""
    authorization, passwords = make_credentials(tmp_path / "credentials", 1)
    server = await start_nats_server(tmp_path / "nats", config=authorization)
    try:
        yield server, passwords
    finally:
        await server.stop()


async def test_p_probes_on_the_owning_shard_process_with_progress(
    tmp_path: Path, secured: tuple[LocalNats, dict[str, Path]]
) -> None:
    nats_server, passwords = secured
    scenario = tmp_path / "quiet.toml"
    scenario.write_text("gpus = 2\n")  # no faults (the default scenario has 8 GPUs)
    config, targets = tmp_path / "shard.toml", tmp_path / "targets.json"
    config.write_text(shard_config(nats_server.url, passwords["shard-1"]))
    (tmp_path / "data").mkdir()
    operator = NatsAuth(user=OPERATOR, password=passwords[OPERATOR].read_text().strip())
    async with LoopbackFleet(nodes=2, gpus=2, scenario=scenario, seed=3) as lf:
        write_targets_file(targets, lf.targets(interval=0.5, slow_interval=1.0))
        async with shard_processes([config], targets, tmp_path / "data"):
            viewer = AttachedFleet(nats_server.url, tick_s=0.5, auth=operator)
            await viewer.start()
            try:
                app = build_app(viewer, state_path=tmp_path / "ui.json", refresh_s=0.2)
                async with app.run_test(size=SIZE) as pilot:

                    def streaming() -> bool:
                        snap = viewer.latest()
                        return snap is not None and snap.nodes_streaming == 2

                    await wait_for(pilot, streaming, 60)
                    await pilot.press("p")  # the cursor is on node-001
                    await wait_for(
                        pilot, lambda: isinstance(app.screen, ProbeScreen | ConfirmScreen)
                    )
                    if isinstance(app.screen, ConfirmScreen):  # a busy simulated node
                        await pilot.press("y")
                        await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen))
                    screen = app.screen
                    assert isinstance(screen, ProbeScreen) and screen.node == "node-001"
                    await wait_for(pilot, lambda: screen.report is not None, 120)
                    table = str(screen.query_one("#probe-table", Static).content)
            finally:
                await viewer.stop()
    report = screen.report
    assert report is not None and report.status == "ok", report
    assert report.simulated and {v.gpu for v in report.verdicts} == {0, 1}
    # Progress came over NATS as it does for a local fleet: every measurement the
    # report holds was shown live, each GPU's progress too.
    assert screen._progress is not None and screen._progress.node == "node-001"
    assert len(screen._measured) == len(report.measurements)
    assert {m.gpu for m in screen._measured} == {0, 1}
    assert "quick[/] suite" in table or "quick suite" in table  # the report, drawn
    assert viewer.probes.dropped == 0 and viewer.malformed == 0
    assert viewer.probe_report("node-001") == report
    shard_log = (tmp_path / "data" / "shard-1.log").read_text()
    assert "of node-001 requested by" in shard_log and f"as {OPERATOR}" in shard_log
