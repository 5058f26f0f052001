"""The dashboard over a real simulated fleet on a real terminal (run in a pty by
test_tui_ssh.py): `S` runs a 10 s stand-in for ssh while the fleet is monitored.

Prints one JSON line: the stand-in's report (its /metrics scrapes during the session),
the tick times the runtime handed out, the watchdog's stalls and the nodes' statuses
after the session. ``python -m tests.tui.ssh_monitor_app STATE_DIR``
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from textual.pilot import Pilot

from collectors.demo import start_demo_fleet
from exporter.endpoint import start_metrics_endpoint
from gpufleet.commands.demo import demo_config, demo_contract
from gpufleet.runtime import FleetRuntime
from tui.app import build_app

STAND_IN = Path(__file__).with_name("session_stand_in.py")
SESSION_S = 10.0


def streaming(runtime: FleetRuntime) -> bool:
    latest = runtime.latest()
    return latest is not None and all(n.status == "streaming" for n in latest.nodes)


class SessionFleet(FleetRuntime):
    metrics_url = ""
    report_path = Path()

    def ssh_argv(self, node: str) -> list[str]:
        return [sys.executable, str(STAND_IN), self.metrics_url, str(self.report_path), "10"]


async def main(state_dir: Path) -> None:
    quiet = state_dir / "no-faults.toml"  # every node streams: a goodbye would show
    quiet.write_text("", encoding="utf-8")
    demo = await start_demo_fleet(2, 2, quiet, 0)
    config = demo_config(demo_contract(2, 2))
    runtime = SessionFleet(config, demo.targets, data_dir=state_dir, ssh_options=demo.options)
    ticks: list[float] = []
    runtime.subscribe(lambda _snapshot: ticks.append(time.monotonic()))
    await runtime.start()
    server = await start_metrics_endpoint("127.0.0.1:0", runtime)
    runtime.metrics_url, runtime.report_path = server.url, state_dir / "session.json"
    app = build_app(runtime, state_path=state_dir / "ui.json")

    async def ssh_and_back(pilot: Pilot[object]) -> None:
        while not (streaming(runtime) and len(ticks) >= 3):
            await pilot.pause(0.1)
        await pilot.press("S")
        while getattr(pilot.app, "in_ssh", False):
            await pilot.pause(0.1)
        pilot.app.exit()

    try:
        await app.run_async(auto_pilot=ssh_and_back)
        latest = runtime.latest()
        statuses = {n.name: n.status for n in latest.nodes} if latest is not None else {}
        entries = [e.text for e in runtime.desk.event_log(3600)] if runtime.desk else []
    finally:
        await server.stop()
        await runtime.stop()
        await demo.stop()
    session = json.loads(runtime.report_path.read_text())
    result = {
        "session": session,
        "ticks": ticks,
        "stall_threshold_s": runtime.watchdog.threshold_s,
        "stalls": [s.cause for s in runtime.watchdog.stalls],
        "statuses": statuses,
        "event_log": entries,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
