"""A loopback fleet with an SshFleet already reading it: the transport's test harness."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any

from collectors.ssh.fleet import SshFleet
from collectors.ssh.options import SshOptions
from testkit.loopback.behaviour import NodeBehaviour
from testkit.loopback.execs import NodeMode
from testkit.loopback.fleet import LoopbackFleet
from testkit.loopback.recorder import UpdateRecorder

# Short sample intervals keep tests waiting for a second or two, not ten.
FAST_INTERVAL = 0.2
# A teardown that has not finished by then is stuck. Twice in full-suite runs (never
# alone or under a stress loop) a fault test's teardown hung until pytest-timeout's
# 120 s, whose thread dump cannot show a suspended coroutine: this bound fails sooner
# and prints every task's stack, so the next occurrence says where it waits.
TEARDOWN_S = 30.0


async def bounded_teardown(step: Awaitable[Any], what: str) -> None:
    """Await ``step``; past :data:`TEARDOWN_S`, print every task's stack and fail."""
    try:
        await asyncio.wait_for(step, TEARDOWN_S)
    except TimeoutError:
        stacks = io.StringIO()
        for task in asyncio.all_tasks():
            task.print_stack(file=stacks)
        print(stacks.getvalue(), file=sys.stderr)
        raise AssertionError(f"{what} did not finish within {TEARDOWN_S:.0f} s") from None


def fast_options(**changes: Any) -> SshOptions:
    """Quick timeouts and retries, no ~/.ssh/config, a tiny stand-in agent bundle.

    Canned nodes never run the bundle; pass ``agent_bundle=None`` for the real one.
    """
    settings: dict[str, Any] = {
        "connect_timeout": 1.0,
        "keepalive_interval": 1.0,
        "backoff_base": 0.05,
        "backoff_cap": 0.2,
        "ssh_config": None,
        "agent_bundle": ("agent-0123456789ab.pyz", b"# canned nodes never run this\n"),
    }
    settings.update(changes)
    return SshOptions(**settings)


@contextlib.asynccontextmanager
async def streaming_fleet(
    nodes: int,
    options: SshOptions,
    behaviours: Mapping[str, NodeBehaviour] | None = None,
    *,
    gpus: int = 2,
    mode: NodeMode = "canned",
    **target_overrides: Any,
) -> AsyncIterator[tuple[LoopbackFleet, SshFleet, UpdateRecorder]]:
    """Loopback nodes (canned by default) and a started SshFleet recording their updates.

    Targets sample every :data:`FAST_INTERVAL` unless ``interval`` is overridden.
    """
    target_overrides.setdefault("interval", FAST_INTERVAL)
    loopback = LoopbackFleet(nodes, gpus=gpus, mode=mode, behaviours=behaviours)
    await loopback.__aenter__()
    try:
        recorder = UpdateRecorder()
        fleet = SshFleet(loopback.targets(**target_overrides), recorder, options)
        await fleet.start()
        try:
            yield loopback, fleet, recorder
        finally:
            await bounded_teardown(fleet.stop(), "SshFleet.stop()")
    finally:
        await bounded_teardown(loopback.__aexit__(None, None, None), "the loopback fleet's stop")
