"""Fixtures of the SSH transport tests (the harness itself is testkit.loopback.harness)."""

from __future__ import annotations

import pytest

from collectors.ssh import SshOptions
from testkit.loopback.harness import fast_options as make_fast_options


@pytest.fixture
def fast_options() -> SshOptions:
    """Quick timeouts and retries; a tiny stand-in agent bundle (canned nodes ignore it)."""
    return make_fast_options()
