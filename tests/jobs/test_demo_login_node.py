"""gpufleet demo's runtime asks the simulated login node: the demo's jobs have names."""

from __future__ import annotations

from pathlib import Path

from collectors.demo import start_demo_fleet
from gpufleet.commands.demo import demo_config, demo_contract, demo_runtime
from testkit.loopback.recorder import eventually


async def test_the_demo_names_its_jobs(tmp_path: Path) -> None:
    demo = await start_demo_fleet(nodes=6, gpus=8)  # the demo scenario: job 4242 on node-003
    try:
        runtime = demo_runtime(demo_config(demo_contract(6, 8)), demo, tmp_path)
        assert runtime.scheduler is not None
        await runtime.start()
        try:

            def named() -> bool:
                snap = runtime.latest()
                node = None if snap is None else snap.node("node-003")
                return node is not None and any(
                    (i.job, i.name, i.account) == ("4242", "llama-pretrain", "nlp")
                    for i in node.jobs
                )

            await eventually(named, 90)
        finally:
            await runtime.stop()
    finally:
        await demo.stop()
