"""Fixtures of the SSH transport tests: canned loopback nodes and fast retry settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from collectors.loopback import LoopbackFleet, NodeBehaviour
from collectors.loopback.recorder import UpdateRecorder
from collectors.ssh import SshFleet, SshOptions

# Short intervals keep every test well under a second or two of waiting.
INTERVAL = 0.2


@pytest.fixture
def fast_options() -> SshOptions:
    """Quick timeouts and retries; a tiny stand-in agent bundle (canned nodes ignore it)."""
    return SshOptions(
        connect_timeout=1.0,
        keepalive_interval=1.0,
        backoff_base=0.05,
        backoff_cap=0.2,
        ssh_config=None,
        agent_bundle=("agent-0123456789ab.pyz", b"# canned nodes never run this\n"),
    )


@contextlib.asynccontextmanager
async def canned_fleet(
    nodes: int,
    options: SshOptions,
    behaviours: Mapping[str, NodeBehaviour] | None = None,
    **target_overrides: Any,
) -> AsyncIterator[tuple[LoopbackFleet, SshFleet, UpdateRecorder]]:
    """Loopback nodes streaming canned lines, and an SshFleet reading them."""
    async with LoopbackFleet(nodes, gpus=2, mode="canned", behaviours=behaviours) as loopback:
        recorder = UpdateRecorder()
        targets = loopback.targets(interval=INTERVAL, **target_overrides)
        fleet = SshFleet(targets, recorder, options)
        await fleet.start()
        try:
            yield loopback, fleet, recorder
        finally:
            await fleet.stop()
