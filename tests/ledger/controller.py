"""A real controller in its own process, for tests that SIGSTOP or SIGKILL it.

``python -m tests.ledger.controller SPEC.json`` runs a :class:`FleetRuntime` on the
targets in the spec, recording into its data directory; prints ``up`` once every node
is up and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime


async def run(spec: dict[str, object]) -> None:
    """Watch the fleet of ``spec`` until SIGTERM."""
    targets = [
        NodeTarget(**{**t, "identity_files": tuple(t["identity_files"])})  # type: ignore[dict-item]
        for t in spec["targets"]  # type: ignore[attr-defined]
    ]
    interval = float(spec["interval"])  # type: ignore[arg-type]
    config = parse_config(
        {"fleet": {"hosts": [t.name for t in targets], "interval": interval},
         "history": {"flush_interval_s": 1.0}}
    )  # fmt: skip
    runtime = FleetRuntime(
        config,
        targets,
        data_dir=Path(str(spec["data_dir"])),
        ssh_options=SshOptions(backoff_base=0.5, backoff_cap=1.0),
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await runtime.start()
    print("started", flush=True)
    announced = False
    while not stop.is_set():
        snap = runtime.latest()
        if not announced and snap is not None and all(n.state == "up" for n in snap.nodes):
            print("up", flush=True)
            announced = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)
    await runtime.stop()
    print("stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(run(json.loads(Path(sys.argv[1]).read_text())))
